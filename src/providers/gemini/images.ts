/**
 * Images into and out of Gemini: the inputs as inline parts, the frame of an edit, and the picture taken from an
 * answer as a stored jpg or png.
 */
import type { GenerateContentResponse, Part } from '@google/genai';
import sharp from 'sharp';
import type { RenderedAsset } from '../provider';
import { ImageRefused, MAX_IMAGE_PIXELS, usableImage, type UsableImage } from '../../generation/image-limits';
import { badAnswer, noImage } from './failures';

/** The stored inputs are JPEG, PNG or WebP (HEIC is converted on arrival); the bytes say which. */
function mimeTypeOf(bytes: Buffer): string {
  if (bytes[0] === 0x89 && bytes.toString('latin1', 1, 4) === 'PNG') return 'image/png';
  if (bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return 'image/jpeg';
}

export const inlineImage = (bytes: Buffer): Part => ({ inlineData: { mimeType: mimeTypeOf(bytes), data: bytes.toString('base64') } });

/** The five ratios of the contract, all of which Gemini's imageConfig.aspectRatio accepts as they are. */
const RATIOS = ['9:16', '3:4', '1:1', '4:3', '16:9'] as const;

/**
 * An edit keeps its source's frame: the contract ratio nearest to the source's shape, and the size class of its
 * long side (up to 1024 px is 1K, up to 2048 px 2K, above 4K), as the renders it edits were made.
 */
export async function editFrame(source: Buffer): Promise<{ aspectRatio: string; imageSize: '1K' | '2K' | '4K' }> {
  const { width = 1, height = 1 } = await sharp(source).metadata();
  const shape = Math.log(width / height);
  const distance = (ratio: string) => {
    const [w, h] = ratio.split(':').map(Number);
    return Math.abs(Math.log(w / h) - shape);
  };
  const aspectRatio = RATIOS.reduce((best, ratio) => (distance(ratio) < distance(best) ? ratio : best));
  const longSide = Math.max(width, height);
  return { aspectRatio, imageSize: longSide <= 1024 ? '1K' : longSide <= 2048 ? '2K' : '4K' };
}

/**
 * The picture of an answer: its LAST inline image part. Image models that think may first send draft images in
 * parts marked `thought`; the SDK's `response.data` would join them all, so it is not used.
 */
export async function pictureOf(response: GenerateContentResponse): Promise<RenderedAsset> {
  const parts = response.candidates?.[0]?.content?.parts ?? [];
  const image = parts.filter((p) => p.inlineData?.data && p.inlineData.mimeType?.startsWith('image/')).at(-1);
  if (!image) {
    const said = parts.filter((p) => p.text && !p.thought).map((p) => p.text).join(' ').trim();
    throw noImage(response, said);
  }
  const { bytes, format } = await checkedPicture(Buffer.from(image.inlineData!.data!, 'base64'));
  if (format === 'jpeg') return { bytes, extension: 'jpg' };
  if (format === 'png') return { bytes, extension: 'png' };
  // Another format (e.g. WebP): stored as PNG, lossless, so the result is one of the two the service serves.
  return { bytes: await sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS }).png().toBuffer(), extension: 'png' };
}

/**
 * Gemini's picture checked as the API checks an input before it is stored (`usableImage`: JPEG, PNG or WebP, its
 * size within the caps from the header, then every pixel decoded once). A picture that fails is a bad answer
 * (final: the same prompt is not retried into a broken result).
 */
async function checkedPicture(bytes: Buffer): Promise<UsableImage> {
  try {
    return await usableImage(bytes);
  } catch (err) {
    if (err instanceof ImageRefused) throw badAnswer(`Gemini's image ${err.message}`);
    throw err;
  }
}
