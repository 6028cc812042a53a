/**
 * The composition root of the provider ports: one provider per capability, chosen by configuration
 * (`IMAGE_PROVIDER`, `TEXT_PROVIDER`, `VIDEO_PROVIDER`). A provider selected without its key is "not configured":
 * the service still starts, the API refuses what needs it before holding anything (503), and its slot holds a
 * stand-in that refuses every call, so nothing reaches a provider that cannot answer.
 */
import { GeminiProvider } from './gemini';
import { LocalRenderer } from './local-renderer';
import {
  ImageProvider, ProviderError, TextProvider, VideoProvider,
} from './provider';

export type Capability = 'image' | 'text' | 'video';

export interface Providers {
  image: ImageProvider;
  text: TextProvider;
  video: VideoProvider;
  /** Why a capability cannot be served (its provider's key is missing), if it cannot. */
  unavailable: Partial<Record<Capability, string>>;
}

/** The task queue of a provider's calls; its workers cap concurrency and rate for every worker process at once. */
export const providerTaskQueue = (providerName: string): string => `imagery-provider-${providerName}`;

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
  geminiApiKey: string | undefined;
  geminiBaseUrl: string;
  geminiImageModel: string;
  geminiTextModel: string;
  geminiTimeoutMs: number;
}

export function createProviders(config: ProviderConfig): Providers {
  const local = new LocalRenderer({ delayMs: config.localRendererDelayMs, ffmpegPath: config.ffmpegPath });
  const providers = allFrom(local);
  // One Gemini client serves images and text when both select it.
  const gemini = config.geminiApiKey ? new GeminiProvider({
    apiKey: config.geminiApiKey, baseUrl: config.geminiBaseUrl, imageModel: config.geminiImageModel,
    textModel: config.geminiTextModel, timeoutMs: config.geminiTimeoutMs,
  }) : undefined;
  const pick = <C extends Capability>(capability: C, name: string): void => {
    if (name === 'local') return;
    if (name === 'gemini' && gemini) {
      (providers as unknown as Record<C, unknown>)[capability] = gemini;
      return;
    }
    const reason = name === 'gemini' ? 'GEMINI_API_KEY is not set' : `${name} is not available in this build`;
    (providers as unknown as Record<C, unknown>)[capability] = new UnconfiguredProvider(name, reason);
    providers.unavailable[capability] = reason;
  };
  pick('image', config.imageProvider);
  pick('text', config.textProvider);
  pick('video', config.videoProvider);
  return providers;
}
