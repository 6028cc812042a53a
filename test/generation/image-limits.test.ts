import assert from 'node:assert/strict';
import sharp from 'sharp';
import { decodeEveryPixel } from '../../src/generation/image-limits';
import { noiseImage, truncatedImage } from '../support/fixtures';

/** Whether a promise settles without an error. */
const decodes = (work: Promise<unknown>): Promise<boolean> => work.then(() => true, () => false);

/** A full-size decode of every pixel: what the API's check must refuse no less often than. */
const fullDecode = (bytes: Buffer) => sharp(bytes, { failOn: 'error', ignoreIcc: true }).raw().toBuffer();

describe('the decode of every image on arrival', () => {
  it('refuses exactly what a full-size decode refuses, though a JPEG or WebP is shrunk while it loads', async () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      for (const [width, height] of [[480, 360], [1999, 1501]]) {
        const good = await noiseImage(format, width, height);
        const variants: [string, Buffer][] = [['whole', good], ['truncated', truncatedImage(good)]];
        if (format === 'jpeg') {
          const progressive = await sharp(good).jpeg({ progressive: true }).toBuffer();
          variants.push(['progressive', progressive], ['progressive, truncated', truncatedImage(progressive)]);
        }
        for (const at of [0.3, 0.8]) {
          const damaged = Buffer.from(good);
          damaged.fill(0x55, Math.floor(damaged.length * at), Math.floor(damaged.length * at) + 64);
          variants.push([`64 bytes overwritten at ${at}`, damaged]);
        }
        for (const [what, bytes] of variants) {
          const expected = await decodes(fullDecode(bytes));
          assert.equal(await decodes(decodeEveryPixel(bytes, width, height)), expected, `${format} ${width}x${height}, ${what}`);
          if (what === 'whole' || what === 'progressive') assert.equal(expected, true, `${format} ${what} decodes`);
          if (what.includes('truncated')) assert.equal(expected, false, `${format} ${what} is refused`);
        }
      }
    }
  });

  it('takes images too small to shrink', async () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) await decodeEveryPixel(await noiseImage(format, 3, 5), 3, 5);
  });
});
