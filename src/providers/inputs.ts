/**
 * The inputs of a render proven whole before a provider reads them. The API checks a generation's images by their
 * header only (docs/api.md "Damaged images"), so data damaged behind an intact header is found here, in the worker:
 * a permanent refusal (`invalid_image`, not retried), since the same bytes fail the same way on every attempt.
 */
import { decodableImage } from '../generation/image-limits';
import { ProviderError } from './provider';

export async function requireDecodable(images: Buffer[]): Promise<void> {
  for (const image of images) {
    await decodableImage(image).catch((err: Error) => {
      throw new ProviderError(`The image ${err.message}`, 'invalid_image', false);
    });
  }
}
