/**
 * The inputs of a render proven whole before a provider reads them. The API checks a generation's images by their
 * header only (docs/api.md "Damaged images"), so data damaged behind an intact header is found here, in the worker:
 * a permanent refusal (`invalid_image`, not retried), since the same bytes fail the same way on every attempt.
 */
import os from 'node:os';
import pLimit from 'p-limit';
import { decodableImage } from '../generation/image-limits';
import { ProviderError } from './provider';

/**
 * Decodes at once in this process, whatever the providers' own caps: one fewer than the cores (at least one). A
 * WebP or an interlaced PNG is decoded whole (up to about 200 MB at 50 megapixels), so a worker of a remote provider,
 * otherwise waiting on the network, holds at most that many.
 */
const decodes = pLimit(Math.max(1, os.availableParallelism() - 1));

/** Inputs known whole already (`knownWhole`): not decoded again. */
const whole = new WeakSet<Buffer>();

/**
 * Marks an input read from the store as whole: its every pixel was decoded before its action was accepted (an
 * upload's, decoded when it was uploaded: the params' `wholeInputs`), so `requireDecodable` passes it as it is.
 */
export function knownWhole(image: Buffer): Buffer {
  whole.add(image);
  return image;
}

/**
 * Proves each input whole in turn (absent optional inputs, such as a card's design reference, are skipped, and so
 * are those `knownWhole`).
 */
export async function requireDecodable(images: (Buffer | undefined)[]): Promise<void> {
  for (const image of images) {
    if (!image || whole.has(image)) continue;
    await decodes(() => decodableImage(image)).catch((err: Error) => {
      throw new ProviderError(`The image ${err.message}`, 'invalid_image', false);
    });
  }
}
