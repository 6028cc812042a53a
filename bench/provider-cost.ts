/**
 * The provider's own cost, measured apart: the local renderer in its normal mode (no delay) rendering a photo,
 * a card, an edit and a video in this process, one after the other.
 */
import sharp from 'sharp';
import { LocalRenderer } from '../src/providers/local-renderer';
import { Figures, recordValue } from './measured';

/** A 1200×1600 photo of noise, so that nothing is trivially compressible. */
export async function productPhoto(width = 1200, height = 1600): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).jpeg().toBuffer();
}

export async function measureProviderCost(repeats: number, figures: Figures, warm = true): Promise<void> {
  const renderer = new LocalRenderer({ delayMs: 0 });
  const image = await productPhoto();
  const common = { images: [image], productName: 'Bench cup', categoryId: 'home', conceptId: 'home_in_use', locale: 'en' as const, aspectRatio: '3:4' };
  const renders: [string, () => Promise<unknown>][] = [
    ['provider.photo', () => renderer.renderPhoto({ ...common, photoStyle: 'classic', resolution: '2K' })],
    ['provider.card', () => renderer.renderCard({ ...common, userText: 'Quality materials. Thoughtful design. Easy to use', style: 'infographic', creativity: 0.5 })],
    ['provider.edit', () => renderer.renderEdit({ source: image, instruction: 'make it warmer' })],
    ['provider.video', () => renderer.startVideo({ image, scenario: 'push in', durationSec: 5, loopMode: false, cardMode: false, aspectRatio: '3:4' })],
  ];
  if (warm) for (const [, render] of renders) await render(); // warm-up: sharp and ffmpeg loaded, caches filled
  for (let r = 0; r < repeats; r++) {
    for (const [key, render] of renders) {
      const t = performance.now();
      await render();
      recordValue(figures, key, performance.now() - t);
    }
  }
}
