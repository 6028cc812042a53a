import assert from 'node:assert/strict';
import sharp from 'sharp';
import { decodableImage, decodeEveryPixel, ImageRefused, usableImage } from '../../src/generation/image-limits';
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

describe('the check of an image by its header only', () => {
  // A truncated WebP's header often gives it away already (libwebp checks the first partition's size against the
  // data), so it is left out here; either way it is refused, at arrival or by decodableImage.
  it('takes an image damaged behind an intact header without decoding it; decodableImage refuses it, and takes the whole one', async () => {
    for (const format of ['jpeg', 'png'] as const) {
      const good = await noiseImage(format);
      const damaged = truncatedImage(good);
      assert.deepEqual(await usableImage(damaged, { pixels: 'header' }).then(({ format: f, width, height, decoded }) => ({ f, width, height, decoded })),
        { f: format, width: 480, height: 360, decoded: false }, format);
      await assert.rejects(usableImage(damaged), ImageRefused, `${format}: decoded by default`);
      const refused = await decodableImage(damaged).then(() => undefined, (err: unknown) => err);
      assert.ok(refused instanceof ImageRefused && refused.reason === 'undecodable', `${format}: ${String(refused)}`);
      assert.match(refused.message, new RegExp(`^cannot be decoded as ${format.toUpperCase()} \\(`));
      await decodableImage(good);
      assert.equal((await usableImage(good)).decoded, true);
    }
  });

  it('still converts (so decodes) what must be converted: a CMYK JPEG is refused when damaged even by its header', async () => {
    const cmyk = await sharp({ create: { width: 480, height: 360, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
      .toColourspace('cmyk').jpeg().toBuffer();
    await assert.rejects(usableImage(truncatedImage(cmyk), { pixels: 'header' }), ImageRefused);
    assert.equal((await usableImage(cmyk, { pixels: 'header' })).decoded, true);
  });
});
