/**
 * The composition root of the provider ports: one provider per capability, chosen by configuration
 * (`IMAGE_PROVIDER`, `TEXT_PROVIDER`, `VIDEO_PROVIDER`). A provider selected without its key is "not configured":
 * the service still starts, the API refuses what needs it before holding anything (503), and its slot holds a
 * stand-in that refuses every call, so nothing reaches a provider that cannot answer.
 */
import type { Config } from '../config';
import { OutboundPolicy } from '../net/outbound';
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
  startVideo = async () => this.refuse();
  checkVideo = async () => this.refuse();
  cancelVideo = async () => this.refuse();
}

export interface ProviderConfig {
  imageProvider: 'local' | 'gemini';
  textProvider: 'local' | 'gemini';
  videoProvider: 'local' | 'runway';
  localRendererDelayMs: number;
  ffmpegPath: string | undefined;
  /** Runway settings (`VIDEO_PROVIDER=runway`); without a key the video provider is not configured. */
  runwayApiKey?: string;
  runwayBaseUrl?: Config['runwayBaseUrl'];
  runwayVideoModel?: Config['runwayVideoModel'];
  runwayPollIntervalSeconds?: number;
  runwayTimeoutMs?: number;
  outboundAllowCidrs?: string[];
}

/** The Runway adapter, or why it cannot be used. */
function runway(config: ProviderConfig): VideoProvider | string {
  if (!config.runwayApiKey) return 'RUNWAY_API_KEY is not set';
  return new RunwayProvider({
    apiKey: config.runwayApiKey,
    baseUrl: config.runwayBaseUrl ?? 'https://api.dev.runwayml.com',
    model: config.runwayVideoModel ?? 'gen4_turbo',
    pollIntervalSeconds: config.runwayPollIntervalSeconds ?? 6,
    timeoutMs: config.runwayTimeoutMs ?? 30_000,
    outbound: new OutboundPolicy(config.outboundAllowCidrs),
  });
}

export function createProviders(config: ProviderConfig): Providers {
  const local = new LocalRenderer({ delayMs: config.localRendererDelayMs, ffmpegPath: config.ffmpegPath });
  const providers = allFrom(local);
  // Remote adapters are added here as they land (Gemini for image and text).
  const pick = <C extends Capability>(capability: C, name: string): void => {
    if (name === 'local') return;
    const reason = `${name} is not available in this build`;
    (providers as unknown as Record<C, unknown>)[capability] = new UnconfiguredProvider(name, reason);
    providers.unavailable[capability] = reason;
  };
  pick('image', config.imageProvider);
  pick('text', config.textProvider);
  if (config.videoProvider === 'runway') {
    const video = runway(config);
    if (typeof video === 'string') {
      providers.video = new UnconfiguredProvider('runway', video);
      providers.unavailable.video = video;
    } else {
      providers.video = video;
    }
  }
  return providers;
}
