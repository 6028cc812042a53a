/**
 * Edits: the parent image changed as the instruction asks, recognisably the same picture. Known wishes (brighter,
 * darker, warmer, cooler, black and white, more vivid) are honoured; any other instruction gets a deterministic
 * colour grade chosen from its text, so the same instruction always gives the same edit.
 */
import sharp from 'sharp';
import type { EditJob, RenderedAsset } from '../provider';
import { decodeInput, hashOf } from './compose';

const WISHES: { pattern: RegExp; apply: (s: sharp.Sharp) => sharp.Sharp }[] = [
  { pattern: /bright|light|светл|ярч|clar|brill/i, apply: (s) => s.modulate({ brightness: 1.25 }) },
  { pattern: /dark|темн|oscur/i, apply: (s) => s.modulate({ brightness: 0.75 }) },
  { pattern: /warm|тепл|cálid|calid/i, apply: (s) => s.tint({ r: 255, g: 220, b: 180 }) },
  { pattern: /cool|cold|холод|frí|fri/i, apply: (s) => s.tint({ r: 190, g: 215, b: 255 }) },
  { pattern: /black and white|b&w|grey|gray|monochrome|чёрно|черно|blanco y negro/i, apply: (s) => s.grayscale() },
  { pattern: /vivid|saturat|насыщ|vivo/i, apply: (s) => s.modulate({ saturation: 1.5 }) },
];

export async function renderEdit(job: EditJob): Promise<RenderedAsset> {
  const bytes = await decodeInput(job.source, (source) => {
    let pipeline = source;
    const wishes = WISHES.filter((w) => w.pattern.test(job.instruction));
    if (wishes.length === 0) {
      const h = hashOf(job.instruction);
      pipeline = pipeline.modulate({ brightness: 0.9 + (h % 25) / 100, saturation: 0.8 + ((h >> 5) % 50) / 100, hue: (h >> 10) % 60 - 30 });
    }
    for (const wish of wishes) pipeline = wish.apply(pipeline);
    return pipeline.jpeg({ quality: 88 }).toBuffer();
  });
  return { bytes, extension: 'jpg' };
}
