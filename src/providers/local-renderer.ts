/**
 * The embedded provider: a deterministic local renderer. It really composes images with sharp (the product cut
 * onto a styled studio backdrop at the requested aspect ratio and resolution) and analyses photos from their
 * pixels, so the whole pipeline runs without any external AI.
 */
import sharp from 'sharp';
import { ImageProvider, Locale, PhotoJob, ProductAnalysis, ProviderError, RenderedAsset } from './provider';

const LONG_SIDE: Record<PhotoJob['resolution'], number> = { '1K': 1024, '2K': 2048, '4K': 4096 };

const BACKDROPS: Record<PhotoJob['photoStyle'], [string, string]> = {
  classic: ['#f7f7f5', '#d9dadc'],
  home: ['#f6e9d7', '#c9a98a'],
};

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

export function dimensionsFor(aspectRatio: string, resolution: PhotoJob['resolution']): { width: number; height: number } {
  const [w, h] = aspectRatio.split(':').map(Number);
  const long = LONG_SIDE[resolution];
  return w >= h ? { width: long, height: Math.round((long * h) / w) } : { width: Math.round((long * w) / h), height: long };
}

function colourName(r: number, g: number, b: number): string {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  if (max - min < 24) return max > 200 ? 'white' : max < 60 ? 'black' : 'grey';
  if (max === r) return g > b + 40 ? (g > 160 ? 'yellow' : 'orange') : b > g + 40 ? 'purple' : 'red';
  if (max === g) return 'green';
  return r > g ? 'purple' : 'blue';
}

async function decode(image: Buffer): Promise<sharp.Sharp> {
  try {
    const pipeline = sharp(image, { failOn: 'error' });
    await pipeline.metadata();
    return pipeline;
  } catch (err) {
    throw new ProviderError(`The image cannot be decoded: ${(err as Error).message}`, 'invalid_image', false);
  }
}

export class LocalRenderer implements ImageProvider {
  readonly name = 'local';

  constructor(private readonly options: { delayMs: number } = { delayMs: 0 }) {}

  async analyze(images: Buffer[], locale: Locale): Promise<ProductAnalysis> {
    const stats = await (await decode(images[0])).stats();
    const [r, g, b] = stats.channels.map((c) => c.mean);
    const colour = COLOUR_NAMES[locale][colourName(r, g ?? r, b ?? r)];
    return { category_id: 'other', product_name: `${colour} ${PRODUCT_WORD[locale]}`, qualities: QUALITIES[locale] };
  }

  async renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset> {
    await this.pause(signal);
    const { width, height } = dimensionsFor(job.aspectRatio, job.resolution);
    const product = await (await decode(job.images[0]))
      .rotate()
      .resize({ width: Math.round(width * 0.72), height: Math.round(height * 0.62), fit: 'inside' })
      .png()
      .toBuffer({ resolveWithObject: true });
    const [top, bottom] = BACKDROPS[job.photoStyle];
    const shadowY = Math.round(height / 2 + product.info.height / 2);
    const backdrop = Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
        <defs>
          <linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${top}"/><stop offset="1" stop-color="${bottom}"/></linearGradient>
          <filter id="blur"><feGaussianBlur stdDeviation="${Math.round(width / 60)}"/></filter>
        </defs>
        <rect width="100%" height="100%" fill="url(#bg)"/>
        <ellipse cx="${width / 2}" cy="${shadowY}" rx="${Math.round(product.info.width * 0.45)}" ry="${Math.round(height / 40)}"
          fill="#000" fill-opacity="0.28" filter="url(#blur)"/>
      </svg>`,
    );
    const bytes = await sharp(backdrop)
      .composite([{ input: product.data, gravity: 'centre' }])
      .jpeg({ quality: 88, mozjpeg: false })
      .toBuffer();
    return { bytes, extension: 'jpg' };
  }

  /** The configured render time, abandoned early when the attempt is cancelled. */
  private async pause(signal?: AbortSignal): Promise<void> {
    if (this.options.delayMs <= 0) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, this.options.delayMs);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason ?? new Error('aborted'));
      }, { once: true });
    });
  }
}
