/**
 * The composition root of the provider ports: one provider per capability, chosen by configuration
 * (`IMAGE_PROVIDER`, `TEXT_PROVIDER`, `VIDEO_PROVIDER`). A provider selected without its key is "not configured":
 * the service still starts, the API refuses what needs it before holding anything (503), and its slot holds a
 * stand-in that refuses every call, so nothing reaches a provider that cannot answer.
 */
import type { Config } from '../config';
import { generationUnavailable } from '../errors';
import { OutboundPolicy } from '../net/outbound';
import { GeminiProvider } from './gemini';
import { LocalRenderer } from './local-renderer';
import {
  ImageProvider, ProviderError, TextProvider, VideoProvider,
} from './provider';
import { RunwayProvider } from './runway';

export type Capability = 'image' | 'text' | 'video';

export interface Providers {
  image: ImageProvider;
  text: TextProvider;
  video: VideoProvider;
  /** Why a capability cannot be served (its provider's key is missing), if it cannot. */
  unavailable: Partial<Record<Capability, string>>;
}

/** One provider doing everything (the local renderer, or a test's scripted provider). */
export function allFrom(provider: ImageProvider & TextProvider & VideoProvider): Providers {
  return { image: provider, text: provider, video: provider, unavailable: {} };
}

/** A selected provider that cannot be used: every call is refused for good, with the reason. */
export class UnconfiguredProvider implements ImageProvider, TextProvider, VideoProvider {
  readonly pollIntervalSeconds = 5;

  constructor(readonly name: string, readonly reason: string) {}

  private refuse(): never {
    throw new ProviderError(`The ${this.name} provider is not configured: ${this.reason}`, 'provider_not_configured', false);
  }

  typicalSeconds(): number {
    return 10;
  }
  renderPhoto = async () => this.refuse();
  renderCard = async () => this.refuse();
  renderEdit = async () => this.refuse();
  analyze = async () => this.refuse();
  suggestWishes = async () => this.refuse();
  suggestScenario = async () => this.refuse();
  surveyQuestions = async () => this.refuse();
  suggestIdea = async () => this.refuse();
  startVideo = async () => this.refuse();
  checkVideo = async () => this.refuse();
  cancelVideo = async () => this.refuse();
}

export type ProviderConfig = Pick<Config,
  | 'imageProvider' | 'textProvider' | 'videoProvider' | 'localRendererDelayMs' | 'localRendererCost' | 'ffmpegPath' | 'outboundAllowCidrs'
  | 'geminiApiKey' | 'geminiBaseUrl' | 'geminiImageModel' | 'geminiTextModel' | 'geminiTimeoutMs'
  | 'runwayApiKey' | 'runwayBaseUrl' | 'runwayVideoModel' | 'runwayPollIntervalSeconds' | 'runwayTimeoutMs' | 'providerLimits'>;

/** The Gemini adapter (images and text: one client serves both), or why it cannot be used. */
function gemini(config: ProviderConfig): GeminiProvider | string {
  if (!config.geminiApiKey) return 'GEMINI_API_KEY is not set';
  return new GeminiProvider({
    apiKey: config.geminiApiKey, baseUrl: config.geminiBaseUrl, imageModel: config.geminiImageModel,
    textModel: config.geminiTextModel, timeoutMs: config.geminiTimeoutMs,
  });
}

/** The Runway adapter (video), or why it cannot be used. */
function runway(config: ProviderConfig): RunwayProvider | string {
  if (!config.runwayApiKey) return 'RUNWAY_API_KEY is not set';
  return new RunwayProvider({
    apiKey: config.runwayApiKey, baseUrl: config.runwayBaseUrl, model: config.runwayVideoModel,
    pollIntervalSeconds: config.runwayPollIntervalSeconds, timeoutMs: config.runwayTimeoutMs,
    outbound: new OutboundPolicy(config.outboundAllowCidrs), ffmpegPath: config.ffmpegPath,
  });
}

/** `localMaxConcurrent`: the local renderer's renders at once in this process (its queue's cap by default). */
export function createProviders(config: ProviderConfig, options: { localMaxConcurrent?: number } = {}): Providers {
  const providers = allFrom(new LocalRenderer({
    delayMs: config.localRendererDelayMs, ffmpegPath: config.ffmpegPath, cost: config.localRendererCost,
    maxConcurrent: options.localMaxConcurrent ?? config.providerLimits('local').maxConcurrent,
  }));
  const remote = { gemini: config.imageProvider === 'gemini' || config.textProvider === 'gemini' ? gemini(config) : undefined,
    runway: config.videoProvider === 'runway' ? runway(config) : undefined };
  const pick = (capability: Capability, name: 'local' | 'gemini' | 'runway'): void => {
    if (name === 'local') return;
    const adapter = remote[name]!;
    const slot = providers as unknown as Record<Capability, unknown>;
    if (typeof adapter !== 'string') {
      slot[capability] = adapter;
      return;
    }
    slot[capability] = new UnconfiguredProvider(name, adapter);
    providers.unavailable[capability] = adapter;
  };
  pick('image', config.imageProvider);
  pick('text', config.textProvider);
  pick('video', config.videoProvider);
  return providers;
}

/** 503 before anything is held when the provider that would serve this capability is not configured. */
export function requireProvider({ providers }: { providers: Providers }, capability: Capability): void {
  const reason = providers.unavailable[capability];
  if (reason) throw generationUnavailable(`Generation is unavailable: the ${capability} provider is not configured (${reason})`);
}
