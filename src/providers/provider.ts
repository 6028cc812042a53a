/**
 * The provider port: what the workflows need from an image/video AI. The local renderer implements it today;
 * real provider adapters implement the same interface and map their wire errors onto ProviderError.
 */
export type Locale = 'ru' | 'en' | 'es';

export interface ProductAnalysis {
  category_id: string;
  product_name: string;
  qualities: string[];
}

export interface PhotoJob {
  images: Buffer[];
  productName: string;
  categoryId: string;
  conceptId: string;
  photoStyle: 'classic' | 'home';
  aspectRatio: string;
  resolution: '1K' | '2K' | '4K';
  locale: Locale;
  comment?: string;
}

export type CardStyle = 'infographic' | 'cinematic';

export interface CardJob {
  images: Buffer[];
  productName: string;
  categoryId: string;
  conceptId: string;
  /** The text the card tells (the request's user_text, or the detected qualities). */
  userText: string;
  style: CardStyle;
  designKey?: string;
  /** 0 copies the reference style, 1 is free interpretation (infographic only). */
  creativity: number;
  designReference?: Buffer;
  aspectRatio: string;
  locale: Locale;
}

export interface VideoJob {
  image: Buffer;
  /** The last frame to arrive at (ignored in loop mode). */
  finalFrame?: Buffer;
  scenario: string;
  durationSec: 5 | 10;
  /** The video ends where it starts. */
  loopMode: boolean;
  /** Static camera, the picture (and its text) kept as is. */
  cardMode: boolean;
  aspectRatio: string;
}

export interface EditJob {
  source: Buffer;
  instruction: string;
}

export interface RenderedAsset {
  bytes: Buffer;
  /** File extension of the bytes, without the dot. */
  extension: 'jpg' | 'png' | 'mp4';
}

export interface ImageProvider {
  readonly name: string;
  /** Typical seconds one render takes, for polling hints. */
  typicalSeconds(kind: 'photo' | 'card' | 'video' | 'edit'): number;
  analyze(images: Buffer[], locale: Locale): Promise<ProductAnalysis>;
  renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset>;
  renderCard(job: CardJob, signal?: AbortSignal): Promise<RenderedAsset>;
  renderVideo(job: VideoJob, signal?: AbortSignal): Promise<RenderedAsset>;
  renderEdit(job: EditJob, signal?: AbortSignal): Promise<RenderedAsset>;
}

/**
 * A provider's refusal or failure. `retryable` tells a passing outage (timeouts, 5xx, rate limits) from a
 * permanent refusal (bad input, content policy) that would fail the same way again.
 */
export class ProviderError extends Error {
  constructor(message: string, readonly code: string, readonly retryable: boolean) {
    super(message);
    this.name = 'ProviderError';
  }
}
