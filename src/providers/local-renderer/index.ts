/**
 * The embedded provider: a deterministic local renderer. It really makes images (sharp) and videos (ffmpeg) from
 * the inputs, and analyses photos from their pixels, so the whole pipeline runs without an external AI.
 */
import type { CardJob, EditJob, ImageProvider, Locale, PhotoJob, ProductAnalysis, RenderedAsset, VideoJob } from '../provider';
import { renderCard } from './card';
import { meanColour, pause } from './compose';
import { renderEdit } from './edit';
import { renderPhoto } from './photo';
import { renderVideo } from './video';

export { dimensionsFor } from './compose';

const COLOUR_NAMES: Record<Locale, Record<string, string>> = {
  ru: { red: 'Красный', orange: 'Оранжевый', yellow: 'Жёлтый', green: 'Зелёный', blue: 'Синий', purple: 'Фиолетовый', white: 'Белый', black: 'Чёрный', grey: 'Серый' },
  en: { red: 'Red', orange: 'Orange', yellow: 'Yellow', green: 'Green', blue: 'Blue', purple: 'Purple', white: 'White', black: 'Black', grey: 'Grey' },
  es: { red: 'Rojo', orange: 'Naranja', yellow: 'Amarillo', green: 'Verde', blue: 'Azul', purple: 'Morado', white: 'Blanco', black: 'Negro', grey: 'Gris' },
};
const PRODUCT_WORD: Record<Locale, string> = { ru: 'товар', en: 'product', es: 'producto' };
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
}

export class LocalRenderer implements ImageProvider {
  readonly name = 'local';

  constructor(private readonly options: LocalRendererOptions = {}) {}

  typicalSeconds(kind: 'photo' | 'card' | 'video' | 'edit'): number {
    return Math.ceil((this.options.delayMs ?? 0) / 1000) + (kind === 'video' ? 3 : 1);
  }

  async analyze(images: Buffer[], locale: Locale): Promise<ProductAnalysis> {
    const colour = COLOUR_NAMES[locale][colourName(...(await meanColour(images[0])))];
    return { category_id: 'other', product_name: `${colour} ${PRODUCT_WORD[locale]}`, qualities: QUALITIES[locale] };
  }

  async renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset> {
    await pause(this.options.delayMs ?? 0, signal);
    return renderPhoto(job);
  }

  async renderCard(job: CardJob, signal?: AbortSignal): Promise<RenderedAsset> {
    await pause(this.options.delayMs ?? 0, signal);
    return renderCard(job);
  }

  async renderVideo(job: VideoJob, signal?: AbortSignal): Promise<RenderedAsset> {
    await pause(this.options.delayMs ?? 0, signal);
    return renderVideo(job, this.options.ffmpegPath, signal);
  }

  async renderEdit(job: EditJob, signal?: AbortSignal): Promise<RenderedAsset> {
    await pause(this.options.delayMs ?? 0, signal);
    return renderEdit(job);
  }
}
