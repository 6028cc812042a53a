/**
 * How large an image the service decodes, and the one check every image passes before it is stored: an input at
 * the API, or a provider's picture in a worker.
 */
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
 * The most pixels of an image of 16 bits a channel (a PNG): 25 megapixels, since each costs twice the memory of an
 * 8-bit one (an interlaced PNG is decoded whole: 25 megapixels of 16-bit RGBA are 400 MB, as 50 of 8-bit are).
 * A 16-bit photo of that size is far over MAX_IMAGE_BYTES; only a flat, made-up picture fits under it.
 */
export const MAX_16_BIT_PIXELS = 25_000_000;

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
 * Decodes the whole image once (a header can be intact in front of truncated or corrupt data), in one pass and in
 * bounded memory, keeping only a 1/81 image. A JPEG is shrunk while it loads: libjpeg still reads and checks every
 * block of the compressed data (truncated or damaged data is refused exactly as by a full-size decode,
 * test/generation/image-limits.test.ts) and runs its inverse transform at 1/8 of each side: about a quarter less
 * CPU than a full-size decode. A WebP is decoded whole and scaled as it is written out; a PNG is inflated whole.
 * Colour profiles are not applied: nothing looks at the colours. Rejects with sharp's error when the data is not a
 * whole image.
 */
export async function decodeEveryPixel(bytes: Buffer, width: number, height: number): Promise<void> {
  // A ninth of each side: sharp lets libjpeg scale by 1/8 only when the shrink is over 8 (at exactly 8 it takes 1/4,
  // for libjpeg's rounding).
  await sharp(bytes, { failOn: 'error', limitInputPixels: MAX_IMAGE_PIXELS, ignoreIcc: true })
    .resize({ width: Math.max(1, Math.floor(width / 9)), height: Math.max(1, Math.floor(height / 9)), fit: 'fill' })
    .raw()
    .toBuffer();
}

/** What the bytes say an image is (the first bytes, never a declared media type). */
export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'heic';

/** The formats the service stores: HEIC is converted to JPEG on arrival. */
export type StoredImageFormat = Exclude<ImageFormat, 'heic'>;

export function sniffImageFormat(bytes: Buffer): ImageFormat | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  if (bytes.length >= 12 && bytes.toString('latin1', 4, 8) === 'ftyp' && /^(heic|heix|hevc|hevx|heim|heis|mif1|msf1)$/.test(bytes.toString('latin1', 8, 12))) return 'heic';
  return undefined;
}

/**
 * An image the service will not store, and why: `too_large` (over a cap, found from the header), `not_an_image`
 * (not one of the accepted formats), `animated` (several frames: which one is the product photo is the sender's
 * choice, not the service's) or `undecodable`. The message is what follows the image's name in a sentence
 * (`is 7100x7100 pixels; the limit is 50000000 pixels`), so each caller names the image its own way.
 */
export class ImageRefused extends Error {
  constructor(readonly reason: 'too_large' | 'not_an_image' | 'animated' | 'undecodable', message: string) {
    super(message);
    this.name = 'ImageRefused';
  }
}

/** Bytes that passed `usableImage`, with their format and size. */
export interface UsableImage {
  bytes: Buffer;
  format: StoredImageFormat;
  width: number;
  height: number;
  /** Every pixel was decoded (false: only the header was read, `pixels: 'header'`). */
  decoded: boolean;
}

export interface ImageCheckOptions {
  /**
   * Converts a HEIC (its pixel count checked) to JPEG. Without it HEIC is not accepted. What it throws passes
   * through unchanged (a busy converter is not the image's fault).
   */
  heicToJpeg?: (heic: Buffer, pixels: number) => Promise<Buffer>;
  /**
   * `header`: the pixels of a JPEG, PNG or WebP already in 8-bit sRGB or grey are not decoded; the header alone is
   * checked (format, size, frames), and whoever reads the pixels next finds out whether the data behind it is whole
   * (`decodableImage`). A conversion (HEIC, CMYK, 16 bits) decodes every pixel either way. Default `decode`.
   */
  pixels?: 'decode' | 'header';
}

const FORMAT_NAMES: Record<ImageFormat, string> = { jpeg: 'JPEG', png: 'PNG', webp: 'WebP', heic: 'HEIC' };

const undecodable = (format: ImageFormat, err: unknown) =>
  new ImageRefused('undecodable', `cannot be decoded as ${format.toUpperCase()} (${(err as Error).message})`);

/** The frame count an APNG declares (its `acTL` chunk, which comes before the image data), or 1 for a still PNG. */
function pngFrames(png: Buffer): number {
  for (let at = 8; at + 12 <= png.length; at += 12 + png.readUInt32BE(at)) {
    const type = png.toString('latin1', at + 4, at + 8);
    if (type === 'IDAT') return 1;
    if (type === 'acTL') return at + 16 <= png.length ? png.readUInt32BE(at + 8) : 1;
  }
  return 1;
}

/** How many frames the image has, from its header: WebP as sharp reads it, PNG from its APNG chunk. */
function framesOf(bytes: Buffer, format: ImageFormat, header: sharp.Metadata): number {
  if (format === 'png') return pngFrames(bytes);
  if (format === 'webp') return header.pages ?? 1;
  return 1; // JPEG has one; a HEIC of several images is converted from its primary image.
}

/**
 * Whether the pixels must be converted before they are stored: CMYK (a print JPEG, whose inverted ink values a
 * reader that ignores the colour space shows as a negative) and 16 bits a channel are not what every provider
 * reads right, nor what the service's results are; 8-bit sRGB and 8-bit greyscale are.
 */
const needsEightBitSrgb = (header: sharp.Metadata): boolean => header.depth !== 'uchar' || (header.space !== 'srgb' && header.space !== 'b-w');

/**
 * The image as 8-bit sRGB (greyscale stays grey) in its own format, the colours converted through its ICC profile
 * (sharp's CMYK profile when it has none) and its EXIF (orientation) kept. The conversion decodes every pixel, in
 * one streaming pass: a JPEG is written without Huffman optimisation, which would hold every coefficient of the
 * image (300 MB at 49 megapixels, against 26 MB without).
 */
async function asEightBitSrgb(bytes: Buffer, format: StoredImageFormat, header: sharp.Metadata): Promise<UsableImage> {
  const grey = header.space === 'b-w' || header.space === 'grey16';
  const pixels = sharp(bytes, { failOn: 'error', limitInputPixels: MAX_IMAGE_PIXELS }).keepExif().toColourspace(grey ? 'b-w' : 'srgb');
  const encoded = format === 'jpeg' ? pixels.jpeg({ quality: 90, optimiseCoding: false }) : format === 'png' ? pixels.png() : pixels.webp({ lossless: true });
  const { data, info } = await encoded.toBuffer({ resolveWithObject: true });
  return { bytes: data, format, width: info.width, height: info.height, decoded: true };
}

/**
 * The check of an image before it is stored: the real format sniffed from the bytes; from the header alone,
 * before anything is decoded, the size capped (MAX_IMAGE_SIDE, MAX_IMAGE_PIXELS, MAX_HEIC_PIXELS for HEIC,
 * MAX_16_BIT_PIXELS for 16 bits a channel) and animations refused (a GIF is not taken at all); HEIC converted to
 * JPEG, CMYK and 16-bit pixels to 8-bit sRGB; every pixel decoded once, in bounded memory (unless only the header
 * is asked for: `pixels`). Throws ImageRefused for an image the service will not take.
 */
export async function usableImage(original: Buffer, options: ImageCheckOptions = {}): Promise<UsableImage> {
  const accepted: ImageFormat[] = options.heicToJpeg ? ['jpeg', 'png', 'webp', 'heic'] : ['jpeg', 'png', 'webp'];
  const sniffed = sniffImageFormat(original);
  if (!sniffed || !accepted.includes(sniffed)) {
    const names = accepted.map((f) => FORMAT_NAMES[f]);
    throw new ImageRefused('not_an_image', `is not a ${names.slice(0, -1).join(', ')} or ${names.at(-1)} image`);
  }
  // The header alone gives the size; for HEIC too, since sharp reads the HEIF container without an HEVC decoder.
  const header = await sharp(original, { failOn: 'error', limitInputPixels: false }).metadata().catch((err) => {
    throw undecodable(sniffed, err);
  });
  const refusal = sizeRefusal(header.width ?? 0, header.height ?? 0);
  if (refusal) throw new ImageRefused('too_large', `is ${refusal}`);
  const pixels = (header.width ?? 0) * (header.height ?? 0);
  if (sniffed === 'heic' && pixels > MAX_HEIC_PIXELS) {
    throw new ImageRefused('too_large', `is ${header.width}x${header.height} pixels; the limit is ${MAX_HEIC_PIXELS} pixels for HEIC (send larger photos as JPEG)`);
  }
  if (sniffed !== 'heic' && header.depth === 'ushort' && pixels > MAX_16_BIT_PIXELS) {
    throw new ImageRefused('too_large',
      `is ${header.width}x${header.height} pixels of 16 bits a channel; the limit is ${MAX_16_BIT_PIXELS} pixels for 16-bit images (send larger ones as 8-bit)`);
  }
  const frames = framesOf(original, sniffed, header);
  if (frames > 1) throw new ImageRefused('animated', `is an animated ${FORMAT_NAMES[sniffed]} (${frames} frames); send one frame as a still image`);
  let bytes = original;
  let format = sniffed;
  if (sniffed === 'heic') {
    bytes = await options.heicToJpeg!(original, pixels);
    format = 'jpeg';
  }
  try {
    const { width, height } = sniffed === 'heic' ? await sharp(bytes).metadata() : header;
    if (!width || !height) throw new Error('no dimensions');
    if (sniffed !== 'heic' && needsEightBitSrgb(header)) return await asEightBitSrgb(bytes, sniffed, header);
    if (options.pixels === 'header' && sniffed !== 'heic') return { bytes, format: format as StoredImageFormat, width, height, decoded: false };
    await decodeEveryPixel(bytes, width, height);
    return { bytes, format: format as StoredImageFormat, width, height, decoded: true };
  } catch (err) {
    throw undecodable(format, err);
  }
}

/**
 * Decodes every pixel of an image whose header passed `usableImage` (a stored input, or one checked by its header
 * only; `size` when the caller has read it already) and throws ImageRefused (`undecodable`) when the data behind
 * the header is not whole.
 */
export async function decodableImage(bytes: Buffer, size?: { width: number; height: number }): Promise<void> {
  const format = sniffImageFormat(bytes) ?? 'jpeg';
  try {
    const { width, height } = size ?? await sharp(bytes, { failOn: 'error', limitInputPixels: MAX_IMAGE_PIXELS }).metadata();
    if (!width || !height) throw new Error('no dimensions');
    await decodeEveryPixel(bytes, width, height);
  } catch (err) {
    throw undecodable(format, err);
  }
}
