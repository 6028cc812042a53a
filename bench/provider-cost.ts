/**
 * The provider's own cost, measured apart: the local renderer in its normal mode (no delay) rendering a photo,
 * a card, an edit and a video in this process, one after the other.
 */
import { LocalRenderer } from '../src/providers/local-renderer';
import { noiseImage } from '../test/support/fixtures';
import { Figures, recordValue } from './measured';

export async function measureProviderCost(repeats: number, figures: Figures, warm = true): Promise<void> {
  const renderer = new LocalRenderer({ delayMs: 0 });
  const image = await noiseImage('jpeg', 1200, 1600); // nothing trivially compressible
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
