/**
 * The embedded provider: a deterministic local renderer. It really makes images (sharp) and videos (ffmpeg) from
 * the inputs, and analyses photos from their pixels, so the whole pipeline runs without an external AI.
 */
import {
  CardIdea, CardJob, EditJob, FunnelProductJob, IdeaJob, ImageKind, ImageProvider, PhotoJob, ProductAnalysis, ProviderError, RenderedAsset, ScenarioJob, SurveyQuestion, TextProvider,
  VideoJob, VideoProgress, VideoProvider, WishesJob,
} from '../provider';
import pLimit from 'p-limit';
import type { Locale } from '../../locale';
import { localScenario, localWishes } from './texts';
import { localIdea, localSurveyQuestions } from './funnel-texts';
import { renderCard } from './card';
import { meanColour, pause } from './compose';
import { renderEdit } from './edit';
import { renderPhoto } from './photo';
import { renderVideo } from './video';
import { zeroCostImage, zeroCostVideo } from './zero-cost';
import { requireDecodable } from '../inputs';

export { dimensionsFor } from './compose';

const COLOUR_NAMES: Record<Locale, Record<string, string>> = {
  ru: { red: 'Красный', orange: 'Оранжевый', yellow: 'Жёлтый', green: 'Зелёный', blue: 'Синий', purple: 'Фиолетовый', white: 'Белый', black: 'Чёрный', grey: 'Серый' },
  en: { red: 'Red', orange: 'Orange', yellow: 'Yellow', green: 'Green', blue: 'Blue', purple: 'Purple', white: 'White', black: 'Black', grey: 'Grey' },
  es: { red: 'Rojo', orange: 'Naranja', yellow: 'Amarillo', green: 'Verde', blue: 'Azul', purple: 'Morado', white: 'Blanco', black: 'Negro', grey: 'Gris' },
};
/** A product named by its colour, in each language's word order (`Red product`, `Producto rojo`). */
const PRODUCT_NAME: Record<Locale, (colour: string) => string> = {
  ru: (c) => `${c} товар`, en: (c) => `${c} product`, es: (c) => `Producto ${c.toLowerCase()}`,
};
const QUALITIES: Record<Locale, string[]> = {
  ru: ['Качественные материалы', 'Продуманный дизайн', 'Удобство в использовании'],
  en: ['Quality materials', 'Thoughtful design', 'Easy to use'],
  es: ['Materiales de calidad', 'Diseño cuidado', 'Fácil de usar'],
};

function colourName(r: number, g: number, b: number): string {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  if (max - min < 24) return max > 200 ? 'white' : max < 60 ? 'black' : 'grey';
  if (max === r) return g > b + 40 ? (g > 160 ? 'yellow' : 'orange') : b > g + 40 ? 'purple' : 'red';
  if (max === g) return 'green';
  return r > g ? 'purple' : 'blue';
}

export interface LocalRendererOptions {
  /** Time each render takes at least, so that processing, cancel and restart can be observed. */
  delayMs?: number;
  ffmpegPath?: string;
  /**
   * `normal` (the default) really renders; `zero` is the benchmark's mode: no delay, no rendering, the same small
   * precomputed image or video every time (see zero-cost.ts). Never for production.
   */
  cost?: 'normal' | 'zero';
  /**
   * Renders this process runs at once (the rest wait their turn; unbounded when left out). Images run as local
   * activities of the workflow worker (`inProcess`), outside any provider queue's concurrency cap, so the cap is here.
   * The delay is not a render: it is waited outside the bound. It is also how many renders (their delay included)
   * may run within their workflows' tasks at once (`reserveInProcess`); the others take the provider's queue.
   */
  maxConcurrent?: number;
}

/** Places for renders within their workflows' tasks: at most `places` at once (unbounded when undefined). */
export class InProcessPlaces {
  private taken = 0;

  constructor(private readonly places?: number) {}

  /** A place and its release, or undefined when every place is taken. */
  reserve(): (() => void) | undefined {
    if (this.places === undefined) return () => {};
    if (this.taken >= this.places) return undefined;
    this.taken++;
    return () => void this.taken--;
  }
}

export class LocalRenderer implements ImageProvider, TextProvider, VideoProvider {
  readonly name = 'local';
  readonly inProcess = true;
  /** `maxConcurrent`, at least one; undefined: unbounded. */
  private readonly places?: number;
  private readonly limit?: ReturnType<typeof pLimit>;
  private readonly inProcessPlaces: InProcessPlaces;

  constructor(private readonly options: LocalRendererOptions = {}) {
    this.places = options.maxConcurrent === undefined ? undefined : Math.max(1, options.maxConcurrent);
    this.limit = this.places === undefined ? undefined : pLimit(this.places);
    this.inProcessPlaces = new InProcessPlaces(this.places);
  }

  /**
   * A place for a render within its workflow's task: at most `maxConcurrent` at once, each from its start (delay
   * included) to its end, so that no workflow task waits behind another's render; the zero-cost mode renders
   * nothing and always has room.
   */
  reserveInProcess(): (() => void) | undefined {
    return this.zeroCost ? () => {} : this.inProcessPlaces.reserve();
  }

  /** Runs a render within `maxConcurrent`; one cancelled while it waited for its turn does not start. */
  private bounded<T>(signal: AbortSignal | undefined, render: () => Promise<T>): Promise<T> {
    if (!this.limit) return render();
    return this.limit(() => {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      return render();
    });
  }

  /** Videos render in-process: there is never a task to poll. */
  readonly pollIntervalSeconds = 1;

  typicalSeconds(kind: ImageKind | 'video' = 'video'): number {
    if (this.zeroCost) return 1;
    return Math.ceil((this.options.delayMs ?? 0) / 1000) + (kind === 'video' ? 3 : 1);
  }

  /** The name of the first photo's dominant colour: all the local analysis can read. */
  private async colourOf(image: Buffer, locale: Locale): Promise<string> {
    return COLOUR_NAMES[locale][colourName(...(await meanColour(image)))];
  }

  private analysisFor(colour: string, locale: Locale): ProductAnalysis {
    return { category_id: 'other', product_name: PRODUCT_NAME[locale](colour), qualities: QUALITIES[locale] };
  }

  async analyze(images: Buffer[], locale: Locale): Promise<ProductAnalysis> {
    return this.analysisFor(await this.colourOf(images[0], locale), locale);
  }

  private get zeroCost(): boolean {
    return this.options.cost === 'zero';
  }

  /**
   * The zero-cost mode's render: no rendering, but its inputs proven whole as every render proves them (the API reads
   * a generation's images by their header only), so the benchmark counts that work where it now happens.
   */
  private async zeroCostRender(inputs: (Buffer | undefined)[]): Promise<RenderedAsset> {
    await requireDecodable(inputs);
    return zeroCostImage();
  }

  async renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset> {
    if (this.zeroCost) return this.zeroCostRender(job.images);
    await pause(this.options.delayMs ?? 0, signal);
    return this.bounded(signal, () => renderPhoto(job));
  }

  async renderCard(job: CardJob, signal?: AbortSignal): Promise<RenderedAsset> {
    if (this.zeroCost) return this.zeroCostRender([...job.images, job.designReference]);
    await pause(this.options.delayMs ?? 0, signal);
    return this.bounded(signal, () => renderCard(job));
  }

  async startVideo(job: VideoJob, signal?: AbortSignal): Promise<VideoProgress> {
    if (this.zeroCost) {
      await requireDecodable([job.image, job.finalFrame]);
      return { state: 'done', asset: await zeroCostVideo(this.options.ffmpegPath) };
    }
    await pause(this.options.delayMs ?? 0, signal);
    return { state: 'done', asset: await this.bounded(signal, () => renderVideo(job, this.options.ffmpegPath, signal)) };
  }

  async checkVideo(taskId: string): Promise<VideoProgress> {
    throw new ProviderError(`The local renderer has no video task ${taskId}`, 'unknown_task', false);
  }

  async cancelVideo(): Promise<void> {
    // nothing runs outside the activity that renders
  }

  async suggestWishes(job: WishesJob): Promise<string> {
    const colour = await this.colourOf(job.images[0], job.locale);
    return localWishes(job, this.analysisFor(colour, job.locale), colour);
  }

  async suggestScenario(job: ScenarioJob): Promise<string> {
    return localScenario(job, await this.analyze([job.image], job.locale));
  }

  async surveyQuestions(job: FunnelProductJob): Promise<SurveyQuestion[]> {
    return localSurveyQuestions(job);
  }

  async suggestIdea(job: IdeaJob): Promise<CardIdea> {
    return localIdea(job);
  }

  async renderEdit(job: EditJob, signal?: AbortSignal): Promise<RenderedAsset> {
    if (this.zeroCost) return zeroCostImage();
    await pause(this.options.delayMs ?? 0, signal);
    return this.bounded(signal, () => renderEdit(job));
  }
}
