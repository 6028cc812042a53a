/**
 * Turns an ImageInput (HTTPS `url`, base64 `data`, or an `upl_` id in `data`) into checked bytes: size and pixel
 * count capped before decoding, the real format sniffed from the bytes (never trusted from `media_type`), HEIC
 * converted to JPEG on arrival, and every pixel decoded once to prove the image is usable before anything is held
 * or stored; or, for an image that only a worker reads (a generation whose fields were all sent), its header alone.
 */
import { createHash } from 'node:crypto';
import { findUpload } from './uploads';
import { decodableImage, ImageRefused, type StoredImageFormat, usableImage, type UsableImage } from './image-limits';
import { OutboundFailed, OutboundRefused, OutboundTooLarge } from '../net/outbound';
import { AppError, badRequest, generationUnavailable, imageTooLarge } from '../errors';
import { HeicConversionTimedOut, HeicConverterBusy, heicToJpeg } from './heic-converter';
import type { Services } from '../services';

export const MAX_IMAGE_BYTES = 15 * 1024 * 1024;
const URL_FETCH_TIMEOUT_MS = 15_000;
/** Seconds a request refused for a full HEIC converter queue is asked to wait (`Retry-After`). */
const HEIC_BUSY_RETRY_AFTER_SECONDS = 5;

export interface CheckedImage extends UsableImage {
  /** Set when the image is already stored (an upload). */
  storedKey?: string;
}

export interface ImageInput {
  url?: string;
  data?: string;
  media_type?: string;
  /**
   * An image already stored and checked: a batch item's upload, pinned when the batch was made (`pinUpload`). Read
   * only by a reader made with `{ stored: true }` (a batch's items); every other reader ignores it.
   */
  stored?: StoredImage;
}

/** A stored, checked image: its input key and what its check found. */
export interface StoredImage { key: string; format: StoredImageFormat; width: number; height: number }

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const DATA_URI_PREFIX = /^data:[^,]*;base64,/;

/**
 * Decodes base64 text (a `data:` URI prefix and whitespace are tolerated), refusing oversize before decoding. The
 * text can be 20 MB, so it is sliced (no copy) rather than rewritten, and rewritten only when it holds whitespace.
 */
export function decodeBase64Image(text: string, where: string): Buffer {
  const prefix = text.startsWith('data:') ? DATA_URI_PREFIX.exec(text)?.[0].length ?? 0 : 0;
  let payload = prefix ? text.slice(prefix) : text;
  if (/\s/.test(payload)) payload = payload.replace(/\s+/g, '');
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const decodedSize = Math.floor((payload.length * 3) / 4) - padding;
  if (decodedSize > MAX_IMAGE_BYTES) throw imageTooLarge(`${where} is ${decodedSize} bytes decoded; the limit is ${MAX_IMAGE_BYTES}`);
  if (payload.length === 0 || payload.length % 4 === 1 || !BASE64.test(payload)) throw badRequest(`${where} is not valid base64 data`);
  return Buffer.from(payload, 'base64');
}

/**
 * HEIC to JPEG on the shared converter. A full queue is 503 (the image is fine, the server is busy: try again); a
 * conversion past the timeout is 400, since an image within MAX_HEIC_PIXELS converts in about a second, so one that
 * runs fifteen is built to stall the converter and would again.
 */
async function convertHeic(heic: Buffer, pixels: number, where: string): Promise<Buffer> {
  try {
    return await heicToJpeg(heic, pixels);
  } catch (err) {
    if (err instanceof HeicConverterBusy) {
      throw generationUnavailable(`${where}: the HEIC converter is busy with other requests; try again shortly, or send the image as JPEG`,
        HEIC_BUSY_RETRY_AFTER_SECONDS);
    }
    if (err instanceof HeicConversionTimedOut) throw badRequest(`${where} cannot be decoded as HEIC (${err.message}); send it as JPEG`);
    throw badRequest(`${where} cannot be decoded as HEIC (${(err as Error).message})`);
  }
}

/** An image the service will not take, as the API answers it: 413 over a cap, else 400. */
const refusedImage = (err: ImageRefused, where: string): AppError =>
  err.reason === 'too_large' ? imageTooLarge(`${where} ${err.message}`) : badRequest(`${where} ${err.message}`);

/**
 * How much of an input the API reads: `decode`, every pixel (the default: an upload, or an image a provider is asked
 * about before the answer); `header`, the header alone, for an image that only a worker reads, which decodes it and
 * fails the action, nothing charged, when the data behind the header is damaged (docs/api.md "Damaged images").
 */
export type PixelCheck = 'decode' | 'header';

/**
 * The input checked as every stored image is (`usableImage`), HEIC converted on the shared converter: 413 over
 * MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS (MAX_HEIC_PIXELS for HEIC) or MAX_IMAGE_SIDE, 400 for anything that is not a
 * usable JPEG, PNG, WebP or HEIC, 503 when the HEIC converter's queue is full.
 */
export async function checkImage(original: Buffer, where: string, pixels: PixelCheck = 'decode'): Promise<CheckedImage> {
  if (original.length > MAX_IMAGE_BYTES) throw imageTooLarge(`${where} is ${original.length} bytes; the limit is ${MAX_IMAGE_BYTES}`);
  try {
    return await usableImage(original, { heicToJpeg: (heic, count) => convertHeic(heic, count, where), pixels });
  } catch (err) {
    if (!(err instanceof ImageRefused)) throw err;
    throw refusedImage(err, where);
  }
}

/** Decodes every pixel of the images read by their header only (`field[i]` names them): 400 for a damaged one. */
export async function decodeUnread(images: CheckedImage[], field: string): Promise<void> {
  for (const [index, image] of images.entries()) {
    if (image.decoded) continue;
    await decodableImage(image.bytes, image).catch((err) => {
      throw err instanceof ImageRefused ? refusedImage(err, `${field}[${index}]`) : err;
    });
    image.decoded = true;
  }
}

const EXTENSIONS: Record<CheckedImage['format'], string> = { jpeg: 'jpg', png: 'png', webp: 'webp' };

/** Where checked bytes are stored: content-addressed, so a retry or a repeated image costs one file. */
export function inputKey(image: Pick<CheckedImage, 'bytes' | 'format'>): string {
  return `inputs/${createHash('sha256').update(image.bytes).digest('hex')}.${EXTENSIONS[image.format]}`;
}

export function imageReader({ db, store, outbound }: Pick<Services, 'db' | 'store' | 'outbound'>, options: { stored?: boolean } = {}) {
  async function fromUrl(url: string, where: string, pixels: PixelCheck): Promise<CheckedImage> {
    try {
      const { bytes } = await outbound.fetchBytes(url, { maxBytes: MAX_IMAGE_BYTES, timeoutMs: URL_FETCH_TIMEOUT_MS });
      return await checkImage(bytes, where, pixels);
    } catch (err) {
      if (err instanceof OutboundTooLarge) throw imageTooLarge(`${where}: the image ${err.message}`);
      if (err instanceof OutboundRefused) throw badRequest(`${where}: the URL ${err.message}`);
      if (err instanceof OutboundFailed) throw badRequest(`${where}: the image could not be fetched (${err.message})`);
      throw err;
    }
  }

  async function fromUpload(uploadId: string, where: string, accountId: number): Promise<CheckedImage> {
    const upload = await findUpload(db, uploadId);
    if (!upload || upload.account_id !== accountId) throw new AppError(400, 'upload_not_found', `${where}: upload ${uploadId} does not exist`);
    if (new Date(upload.expires_at).getTime() <= Date.now()) throw new AppError(400, 'upload_expired', `${where}: upload ${uploadId} has expired; upload the image again`);
    // Decoded when it was uploaded.
    const bytes = await store.read(upload.input_key);
    return { bytes, format: upload.format, width: upload.width, height: upload.height, decoded: true, storedKey: upload.input_key };
  }

  /** Reads one ImageInput of the calling account, checked as `pixels` says. */
  return async function readImage(input: ImageInput, where: string, accountId: number, pixels: PixelCheck = 'decode'): Promise<CheckedImage> {
    if (options.stored && input.stored) {
      const { key, format, width, height } = input.stored;
      return { bytes: await store.read(key), format, width, height, decoded: true, storedKey: key };
    }
    if (input.url !== undefined) return fromUrl(input.url, where, pixels);
    if (input.data!.startsWith('upl_')) return fromUpload(input.data!, where, accountId);
    return checkImage(decodeBase64Image(input.data!, where), where, pixels);
  };
}

/** The stored keys of checked images, in order: computed from the bytes, so nothing needs to be stored first. */
export function inputKeys(images: CheckedImage[]): string[] {
  return images.map((image) => image.storedKey ?? inputKey(image));
}

/** Whether `bytes` are what the input `key` was stored as (keys are content-addressed: `inputKey`). */
export function holdsInputKey(key: string, bytes: Buffer): boolean {
  return key.startsWith(`inputs/${createHash('sha256').update(bytes).digest('hex')}.`);
}

/**
 * The params' `wholeInputs` (src/actions/params.ts) of these images: the keys of those decoded whole on arrival,
 * which the worker does not decode again; nothing when there are none.
 */
export function wholeInputs(images: CheckedImage[]): { wholeInputs?: string[] } {
  const keys = inputKeys(images.filter((image) => image.decoded));
  return keys.length > 0 ? { wholeInputs: [...new Set(keys)] } : {};
}

/**
 * Stores the images that are not stored yet, under their `inputKeys`. Called once the action and its hold are
 * committed, so that a refused request (402, a conflict) leaves nothing on disk.
 */
export async function storeInputs({ store }: Pick<Services, 'store'>, images: CheckedImage[]): Promise<void> {
  await Promise.all(images.filter((image) => !image.storedKey).map((image) => store.put(inputKey(image), image.bytes)));
}
