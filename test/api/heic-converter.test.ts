import assert from 'node:assert/strict';
import sharp from 'sharp';
import { HeicConversionTimedOut, HeicConverter, HeicConverterBusy } from '../../src/generation/heic-converter';
import { largeHeic, SAMPLE_HEIC } from '../support/heic';

const SAMPLE_PIXELS = 320 * 320;

describe('HEIC converter limits', function () {
  this.timeout(60_000);

  it('refuses a conversion past maxPending at once, before any work, and accepts again once the queue drains', async () => {
    const converter = new HeicConverter({ maxPending: 2, timeoutMs: 60_000, recycleAbovePixels: Infinity });
    const accepted = [converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS), converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS)];
    await assert.rejects(converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS), HeicConverterBusy);
    assert.equal(converter.pendingConversions, 2);
    await Promise.all(accepted);
    assert.equal(converter.pendingConversions, 0);
    assert.equal((await sharp(await converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS)).metadata()).format, 'jpeg');
    assert.equal(converter.threadCount, 1);
  });

  it('terminates a conversion past the timeout and converts the next one on a new thread', async () => {
    const limits = { maxPending: 4, timeoutMs: 1, recycleAbovePixels: Infinity };
    const converter = new HeicConverter(limits);
    await assert.rejects(converter.convert(largeHeic(12, 12), 3840 * 3840), HeicConversionTimedOut); // takes about a second
    assert.equal(converter.pendingConversions, 0);
    limits.timeoutMs = 60_000;
    const meta = await sharp(await converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS)).metadata();
    assert.deepEqual([meta.format, meta.width], ['jpeg', 320]);
    assert.equal(converter.threadCount, 2, 'the stalled thread was replaced');
  });

  it('replaces its thread after a conversion above recycleAbovePixels (WebAssembly memory never shrinks), keeps it after smaller ones', async () => {
    const converter = new HeicConverter({ maxPending: 4, timeoutMs: 60_000, recycleAbovePixels: SAMPLE_PIXELS });
    await converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS);
    await converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS);
    assert.equal(converter.threadCount, 1);
    await converter.convert(largeHeic(2, 2), 640 * 640);
    await converter.convert(SAMPLE_HEIC, SAMPLE_PIXELS);
    assert.equal(converter.threadCount, 2);
  });
});
