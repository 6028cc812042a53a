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

export interface RenderedAsset {
  bytes: Buffer;
  /** File extension of the bytes, without the dot. */
  extension: 'jpg' | 'png' | 'mp4';
}

export interface ImageProvider {
  readonly name: string;
  analyze(images: Buffer[], locale: Locale): Promise<ProductAnalysis>;
  renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset>;
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
