/** Shared pieces of the local renderer: decoding, sizes, colours and SVG text. */
import sharp from 'sharp';
import { MAX_IMAGE_PIXELS } from '../../generation/image-limits';
import { ProviderError } from '../provider';

export const LONG_SIDE = { '1K': 1024, '2K': 2048, '4K': 4096 } as const;

export function dimensionsFor(aspectRatio: string, longSide: number): { width: number; height: number } {
  const [w, h] = aspectRatio.split(':').map(Number);
  const even = (n: number) => Math.round(n / 2) * 2;
  return w >= h ? { width: longSide, height: even((longSide * h) / w) } : { width: even((longSide * w) / h), height: longSide };
}

/**
 * Runs `use` on an input image, decoding at most MAX_IMAGE_PIXELS. Any failure to decode it (not an image, too
 * many pixels, or corrupt or truncated data behind an intact header, which only shows once the pixels are read) is
 * a permanent refusal: the same bytes would fail the same way on every attempt.
 */
export async function decodeInput<T>(image: Buffer, use: (pipeline: sharp.Sharp) => Promise<T>): Promise<T> {
  try {
    return await use(sharp(image, { failOn: 'error', limitInputPixels: MAX_IMAGE_PIXELS }));
  } catch (err) {
    throw new ProviderError(`The image cannot be decoded: ${(err as Error).message}`, 'invalid_image', false);
  }
}

/** The product fitted into a box, as PNG, with its size. */
export async function fitted(image: Buffer, width: number, height: number): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await decodeInput(image, (pipeline) => pipeline.rotate()
    .resize({ width: Math.round(width), height: Math.round(height), fit: 'inside' })
    .png().toBuffer({ resolveWithObject: true }));
  return { data, width: info.width, height: info.height };
}

/**
 * The mean colour of an 8-bit image (inputs are stored as 8-bit sRGB or greyscale). A greyscale image has one or
 * two channels (grey, alpha): its grey is all three.
 */
export async function meanColour(image: Buffer): Promise<[number, number, number]> {
  const stats = await decodeInput(image, (pipeline) => pipeline.stats());
  const means = stats.channels.map((c) => Math.round(c.mean));
  return means.length >= 3 ? [means[0], means[1], means[2]] : [means[0], means[0], means[0]];
}

export const hex = ([r, g, b]: [number, number, number]) => `#${[r, g, b].map((v) => Math.max(0, Math.min(255, v)).toString(16).padStart(2, '0')).join('')}`;

export function mix(a: [number, number, number], b: [number, number, number], t: number): [number, number, number] {
  return [0, 1, 2].map((i) => Math.round(a[i] + (b[i] - a[i]) * t)) as [number, number, number];
}

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A small deterministic hash of a string, for choices that must repeat for the same input. */
export function hashOf(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Splits text into lines of at most `width` characters, at most `maxLines` lines. */
export function wrap(text: string, width: number, maxLines: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if ((line + ' ' + word).trim().length > width && line) {
      lines.push(line);
      line = word;
    } else line = (line + ' ' + word).trim();
  }
  if (line) lines.push(line);
  return lines.slice(0, maxLines);
}

/** Waits `ms`, abandoned early when the attempt is cancelled. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error('aborted'));
    }, { once: true });
  });
}
