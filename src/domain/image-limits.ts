import sharp from 'sharp';

/**
 * The most pixels the service decodes in one image: 50 megapixels, room for the largest phone photos (8064x6048).
 * The API refuses a bigger image from its header, before any decoding, and every decode of an input is capped at
 * it too, so a small file that unpacks to gigabytes of pixels is refused instead of stalling a process.
 */
export const MAX_IMAGE_PIXELS = 50_000_000;

/**
 * The most pixels of a HEIC image: 25 megapixels, room for the 12- and 24-megapixel photos phones take by default
 * (5712x4284). HEIC is decoded in WebAssembly at about 12 MB of memory and 60 ms of CPU per megapixel, twice what
 * the 50-megapixel cap would allow; a larger photo (a 48-megapixel "HEIF Max" one) can be sent as JPEG.
 */
export const MAX_HEIC_PIXELS = 25_000_000;

/**
 * The longest side the service decodes: 20,000 pixels, beyond the widest phone panoramas. Within the pixel cap a
 * 49,000,000x1 line still decodes in gigabytes of scratch memory and seconds of CPU; no photo is shaped like that.
 */
export const MAX_IMAGE_SIDE = 20_000;

/** Why an image of this size is refused (`"<w>x<h> pixels; the limit is ..."`), or undefined when it is within the caps. */
export function sizeRefusal(width: number, height: number, maxPixels = MAX_IMAGE_PIXELS): string | undefined {
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) return `${width}x${height} pixels; the limit is ${MAX_IMAGE_SIDE} pixels a side`;
  if (width * height > maxPixels) return `${width}x${height} pixels; the limit is ${maxPixels} pixels`;
  return undefined;
}

/**
 * Decodes every pixel once (a header can be intact in front of truncated or corrupt data), in one pass and in
 * bounded memory: a shrink to 1/8 of each side reads every row and column of the full-size decode (no
 * shrink-on-load, which would skip JPEG detail) and keeps only a 1/64 image. About as fast as a plain decode, and
 * 7-8 times cheaper than `stats()`, which runs several passes (statistics, histogram, a sharpness convolution).
 * Colour profiles are not applied: nothing looks at the colours. Rejects with sharp's error when the data is not
 * a whole image.
 */
export async function decodeEveryPixel(bytes: Buffer, width: number, height: number): Promise<void> {
  await sharp(bytes, { failOn: 'error', limitInputPixels: MAX_IMAGE_PIXELS, ignoreIcc: true })
    .resize({ width: Math.ceil(width / 8), height: Math.ceil(height / 8), fit: 'fill', fastShrinkOnLoad: false })
    .raw()
    .toBuffer();
}
