/**
 * An image as Runway takes it inline: a data URI of at most 5 MB. A JPEG, PNG or WebP that fits is sent as it is;
 * anything larger (or of another format) is re-encoded as JPEG, smaller each round until it fits. Either way every
 * pixel is decoded first: data damaged behind an intact header is `invalid_image`, not retried.
 */
import sharp from 'sharp';
import { decodeEveryPixel, MAX_IMAGE_PIXELS } from '../../generation/image-limits';
import { ProviderError } from '../provider';

/** Runway's limit for a data URI, counted on the whole URI (5 MB, read as 5,000,000 characters to be safe). */
const MAX_DATA_URI_CHARS = 5_000_000;

const MIME_TYPES: Partial<Record<string, string>> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

const dataUri = (mime: string, bytes: Buffer): string => `data:${mime};base64,${bytes.toString('base64')}`;

export async function promptImageUri(image: Buffer): Promise<string> {
  try {
    const decode = () => sharp(image, { failOn: 'error', limitInputPixels: MAX_IMAGE_PIXELS });
    const { format, width = 0, height = 0 } = await decode().metadata();
    const mime = format && MIME_TYPES[format];
    const asItIs = mime && dataUri(mime, image);
    if (asItIs && asItIs.length <= MAX_DATA_URI_CHARS) {
      await decodeEveryPixel(image, width, height); // sent as it is: proven whole first (the API read its header only)
      return asItIs;
    }
    // Shrink by the share of the area that should fit (at least 10% a round), so it takes a round or two.
    let longSide = Math.max(width, height);
    for (;;) {
      const jpeg = await decode().rotate().flatten({ background: '#ffffff' })
        .resize({ width: longSide, height: longSide, fit: 'inside', withoutEnlargement: true })
        .jpeg({ quality: 85 }).toBuffer();
      const uri = dataUri('image/jpeg', jpeg);
      if (uri.length <= MAX_DATA_URI_CHARS) return uri;
      longSide = Math.floor(longSide * Math.min(0.9, Math.sqrt(MAX_DATA_URI_CHARS / uri.length)));
    }
  } catch (err) {
    throw new ProviderError(`The image cannot be decoded: ${(err as Error).message}`, 'invalid_image', false);
  }
}
