/**
 * Turns an ImageInput into checked bytes: size capped before decoding, the real format sniffed from the bytes
 * (never trusted from `media_type`), and the pixels decoded once to prove the image is usable.
 */
import sharp from 'sharp';
import { AppError, badRequest, imageTooLarge } from './errors';

export const MAX_IMAGE_BYTES = 15 * 1024 * 1024;

export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'heic';

export interface CheckedImage {
  bytes: Buffer;
  format: ImageFormat;
  width: number;
  height: number;
}

export interface ImageInput { url?: string; data?: string; media_type?: string }

export function sniffImageFormat(bytes: Buffer): ImageFormat | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  if (bytes.length >= 12 && bytes.toString('latin1', 4, 8) === 'ftyp' && /^(heic|heix|hevc|hevx|heim|heis|mif1|msf1)$/.test(bytes.toString('latin1', 8, 12))) return 'heic';
  return undefined;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decodes base64 text (a `data:` URI prefix and whitespace are tolerated), refusing oversize before decoding. */
export function decodeBase64Image(text: string, where: string): Buffer {
  const payload = text.replace(/^data:[^,]*;base64,/, '').replace(/\s+/g, '');
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const decodedSize = Math.floor((payload.length * 3) / 4) - padding;
  if (decodedSize > MAX_IMAGE_BYTES) throw imageTooLarge(`${where} is ${decodedSize} bytes decoded; the limit is ${MAX_IMAGE_BYTES}`);
  if (payload.length === 0 || payload.length % 4 === 1 || !BASE64.test(payload)) throw badRequest(`${where} is not valid base64 data`);
  return Buffer.from(payload, 'base64');
}

export async function checkImage(bytes: Buffer, where: string): Promise<CheckedImage> {
  if (bytes.length > MAX_IMAGE_BYTES) throw imageTooLarge(`${where} is ${bytes.length} bytes; the limit is ${MAX_IMAGE_BYTES}`);
  const format = sniffImageFormat(bytes);
  if (!format) throw badRequest(`${where} is not a JPEG, PNG, WebP or HEIC image`);
  if (format === 'heic') throw badRequest(`${where}: HEIC input is not accepted yet; send JPEG, PNG or WebP`);
  try {
    const meta = await sharp(bytes, { failOn: 'error' }).metadata();
    if (!meta.width || !meta.height) throw new Error('no dimensions');
    return { bytes, format, width: meta.width, height: meta.height };
  } catch {
    throw badRequest(`${where} cannot be decoded as ${format.toUpperCase()}`);
  }
}

export async function readImageInput(input: ImageInput, where: string): Promise<CheckedImage> {
  if (input.url !== undefined) throw new AppError(400, 'invalid_request', `${where}: image URLs are not accepted yet; send base64 data`);
  if (input.data!.startsWith('upl_')) throw new AppError(400, 'invalid_request', `${where}: upload ids are not accepted yet; send base64 data`);
  return checkImage(decodeBase64Image(input.data!, where), where);
}
