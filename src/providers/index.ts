/**
 * The composition root of the provider ports: one provider per capability, chosen by configuration
 * (`IMAGE_PROVIDER`, `TEXT_PROVIDER`, `VIDEO_PROVIDER`). A provider selected without its key is "not configured":
 * the service still starts, the API refuses what needs it before holding anything (503), and its slot holds a
 * stand-in that refuses every call, so nothing reaches a provider that cannot answer.
 */
import { type Config, DEFAULT_SANDBOX_SLOW_SECONDS } from '../config';
import { generationUnavailable } from '../errors';
import { OutboundPolicy } from '../net/outbound';
import { GeminiProvider } from './gemini';
import { LocalRenderer } from './local-renderer';
import {
  ImageProvider, ProviderError, TextProvider, VideoProvider,
} from './provider';
import { RunwayProvider } from './runway';
import { SANDBOX_PROVIDER, SandboxRenderer } from './sandbox';

export type Capability = 'image' | 'text' | 'video';

export interface Providers {
  image: ImageProvider;
  text: TextProvider;
  video: VideoProvider;
  /** Serves test keys' work, whatever the others are (src/providers/sandbox). */
  sandbox: SandboxRenderer;
  /** Why a capability cannot be served (its provider's key is missing), if it cannot. */
  unavailable: Partial<Record<Capability, string>>;
}

/**
 * One provider doing everything (the local renderer, or a test's scripted provider); test keys' work goes to
 * `sandbox`, by default the sandbox renderer over a local renderer of its own.
 */
export function allFrom(provider: ImageProvider & TextProvider & VideoProvider, sandbox?: SandboxRenderer): Providers {
  const local = provider instanceof LocalRenderer ? provider : new LocalRenderer();
  return { image: provider, text: provider, video: provider, sandbox: sandbox ?? new SandboxRenderer(local, { slowMs: DEFAULT_SANDBOX_SLOW_SECONDS * 1000 }), unavailable: {} };
}

/** The providers whose task queues workers serve: the image and video providers' and the sandbox's. */
export function queuedProviders(providers: Providers): string[] {
  return [...new Set([providers.image.name, providers.video.name, providers.sandbox.name])];
}

/** The text provider of a caller: test keys' helpers are the sandbox renderer's. */
export function textFor(providers: Providers, caller: { sandbox?: object }): TextProvider {
  return caller.sandbox ? providers.sandbox : providers.text;
}

/** The image and video providers of an action, by the provider recorded when it was accepted. */
export function providersOf(providers: Providers, action: { provider: string | null }): { image: ImageProvider; video: VideoProvider; drill?: SandboxRenderer } {
  if (action.provider === SANDBOX_PROVIDER) return { image: providers.sandbox, video: providers.sandbox, drill: providers.sandbox };
  return providers;
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
  | 'imageProvider' | 'textProvider' | 'videoProvider' | 'sandboxSlowSeconds' | 'localRendererDelayMs' | 'localRendererCost' | 'ffmpegPath' | 'outboundAllowCidrs'
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
  const places = options.localMaxConcurrent ?? config.providerLimits('local').maxConcurrent;
  const local = new LocalRenderer({ delayMs: config.localRendererDelayMs, ffmpegPath: config.ffmpegPath, cost: config.localRendererCost, maxConcurrent: places });
  // Sandbox renders take places of their own (as many), and share the renderer's bound on renders at once.
  const providers = allFrom(local, new SandboxRenderer(local, { slowMs: config.sandboxSlowSeconds * 1000, places }));
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
export function requireProvider({ providers }: { providers: Providers }, capability: Capability, caller?: { sandbox?: object }): void {
  if (caller?.sandbox) return; // the sandbox renderer is always there
  const reason = providers.unavailable[capability];
  if (reason) throw generationUnavailable(`Generation is unavailable: the ${capability} provider is not configured (${reason})`);
}
