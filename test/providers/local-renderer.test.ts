import assert from 'node:assert/strict';
import { knownWhole } from '../../src/providers/inputs';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { type PhotoJob, ProviderError } from '../../src/providers/provider';
import { noiseImage, truncatedImage } from '../support/fixtures';

/**
 * The API reads a generation's images by their header only (docs/api.md "Damaged images"): each render proves its
 * inputs whole, the photos it does not show too, and so does the benchmark's zero-cost mode.
 */
describe('the local renderer proves its inputs whole', () => {
  const job = (images: Buffer[]): PhotoJob => ({
    images, productName: 'Mug', categoryId: 'home', conceptId: 'home_interior', photoStyle: 'classic', aspectRatio: '1:1', resolution: '1K', locale: 'en',
  });

  it('refuses a damaged photo it shows or only carries, in both cost modes, as a final invalid_image', async () => {
    const good = await noiseImage('jpeg');
    const damaged = truncatedImage(await noiseImage('png'));
    for (const cost of ['normal', 'zero'] as const) {
      const renderer = new LocalRenderer({ cost });
      for (const images of [[damaged], [good, damaged]]) {
        const err = await renderer.renderPhoto(job(images)).then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof ProviderError, `${cost}, ${images.length} images: ${String(err)}`);
        assert.deepEqual([err.code, err.retryable], ['invalid_image', false]);
      }
      assert.ok((await renderer.renderPhoto(job([good, good]))).bytes.length > 0, `${cost}: whole inputs render`);
    }
  });

  it('does not decode again an input known whole (an upload\'s, decoded on arrival), in the zero-cost mode', async () => {
    const good = await noiseImage('jpeg');
    // Marked whole (what the render's reader does only for bytes that still hash to their upload's key), the
    // damaged bytes pass unread: the mark is what spares the decode.
    const marked = knownWhole(truncatedImage(await noiseImage('png')));
    assert.ok((await new LocalRenderer({ cost: 'zero' }).renderPhoto(job([good, marked]))).bytes.length > 0);
  });
});
