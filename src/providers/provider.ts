/**
 * The provider ports: what the service needs from an AI, one interface per capability (images, text, video), each
 * chosen by configuration. The local renderer implements all three; the Gemini adapter images and text, the Runway
 * adapter video. Every adapter maps its wire errors onto ProviderError in one place.
 */
import type { Locale } from '../locale';

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

/** Marketing text for a card (`POST /wishes/suggest`): what to show, from the photos and the chosen concept. */
export interface WishesJob {
  images: Buffer[];
  categoryId: string;
  conceptId: string;
  productName?: string;
  locale: Locale;
}

/** A short video scenario for one photo (`POST /video/suggest-scenario`). */
export interface ScenarioJob {
  image: Buffer;
  productName?: string;
  categoryId?: string;
  locale: Locale;
}

/** What a funnel session knows of its product when it asks for questions or an idea. */
export interface FunnelProductJob {
  images: Buffer[];
  productName: string;
  categoryId: string;
  qualities: string[];
  locale: Locale;
}

/** One survey question of a funnel: `single` and `multiple` come with choices, `text` is answered freely. */
export interface SurveyQuestion {
  id: string;
  text: string;
  kind: 'single' | 'multiple' | 'text';
  choices?: string[];
}

/** An idea for the card; `concept_id` is a concept of the product's category (or `infographic`). */
export interface CardIdea {
  title: string;
  description: string;
  concept_id: string;
  style: CardStyle;
}

/** One more idea for a funnel, different from the ideas already in its pool (given by title). */
export interface IdeaJob extends FunnelProductJob {
  existingTitles: string[];
}

export type ImageKind = 'photo' | 'card' | 'edit';

/** Photos, cards and edits (`IMAGE_PROVIDER`). */
export interface ImageProvider {
  readonly name: string;
  /**
   * Renders in the worker's own process (the local renderer): no remote quota to share, so its images are local
   * activities of the workflow's worker rather than calls on its provider's task queue (`ProviderRoute.inline`)
   * while it has room for them (`reserveInProcess`).
   */
  readonly inProcess?: boolean;
  /**
   * A place for one render within its workflow's task, to give back when it ends; undefined when every place is
   * taken: the render then goes to the provider's queue, so that workflow tasks never wait for a render's turn.
   */
  reserveInProcess?(): (() => void) | undefined;
  /** Typical seconds one render takes, for polling hints. */
  typicalSeconds(kind: ImageKind): number;
  renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset>;
  renderCard(job: CardJob, signal?: AbortSignal): Promise<RenderedAsset>;
  renderEdit(job: EditJob, signal?: AbortSignal): Promise<RenderedAsset>;
}

/** Product analysis and the two writing helpers (`TEXT_PROVIDER`). */
export interface TextProvider {
  readonly name: string;
  analyze(images: Buffer[], locale: Locale, signal?: AbortSignal): Promise<ProductAnalysis>;
  suggestWishes(job: WishesJob, signal?: AbortSignal): Promise<string>;
  suggestScenario(job: ScenarioJob, signal?: AbortSignal): Promise<string>;
  /** 3-5 questions that help choose the card (funnel step 1). */
  surveyQuestions(job: FunnelProductJob, signal?: AbortSignal): Promise<SurveyQuestion[]>;
  /** One idea for the card that is not among `existingTitles` (funnel step 2). */
  suggestIdea(job: IdeaJob, signal?: AbortSignal): Promise<CardIdea>;
}

/**
 * Where a video render stands. A provider that renders in-process answers `done` from `startVideo`; a remote one
 * answers `running` with its task id, and the workflow asks `checkVideo` again on a timer until it is done (or
 * throws a ProviderError). Submitting is never repeated for a task id that was answered.
 */
export type VideoProgress =
  | { state: 'done'; asset: RenderedAsset }
  | { state: 'running'; taskId: string; progress?: number };

/** Product videos (`VIDEO_PROVIDER`). */
export interface VideoProvider {
  readonly name: string;
  typicalSeconds(): number;
  /** Seconds between two checks of a running task (the provider's own guidance). */
  readonly pollIntervalSeconds: number;
  startVideo(job: VideoJob, signal?: AbortSignal): Promise<VideoProgress>;
  checkVideo(taskId: string, signal?: AbortSignal): Promise<VideoProgress>;
  /** Best effort: asks the provider to stop a task (a cancelled action). */
  cancelVideo(taskId: string): Promise<void>;
}

/**
 * A provider's refusal or failure. `retryable` tells a passing outage (timeouts, 5xx, rate limits) from a
 * permanent refusal (bad input, content policy) that would fail the same way again.
 */
export class ProviderError extends Error {
  /** `taskEnded`: a provider task (a video) ended in this failure, so a retry must submit a new one. */
  constructor(message: string, readonly code: string, readonly retryable: boolean, readonly taskEnded = false) {
    super(message);
    this.name = 'ProviderError';
  }
}
