/**
 * What a batch's creation checks of each item beyond its schema, before anything is written or held: what its
 * single request would refuse without asking a provider or fetching a URL (a card's combination of options, an
 * upload that is not the account's or has expired, base64 that is not an image, a video's image too small, an
 * edit of an action that cannot be edited), and its price. Each item's images are kept as sent, except uploads,
 * which are pinned (their stored key), so that an item starting hours later still finds them.
 */
import type { DataSource } from 'typeorm';
import { priceOf, type PriceList, readPriceList } from '../billing/pricing';
import { AppError } from '../errors';
import { checkCardOrder, editableSource, MIN_VIDEO_SIDE } from '../generation/prepare';
import { checkImage, decodeBase64Image, type ImageInput, type StoredImage } from '../generation/images';
import type { Caller, Services } from '../services';
import type { ItemType } from './store';

/** One refusal of an item, as its single request would have answered it. */
export interface ItemError { code: string; message: string }

export type CheckedItem = { request: Record<string, unknown>; price: number; error?: undefined } | { error: ItemError };

interface UploadRow { id: string; input_key: string; format: StoredImage['format']; width: number; height: number; expired: boolean; account_id: number }

/** Each item checked, in order: its request made ready to store and its price, or why it is refused. */
export async function checkItems(
  services: Pick<Services, 'db'>, caller: Caller, items: { type: ItemType; request: Record<string, unknown> }[],
): Promise<CheckedItem[]> {
  const { db } = services;
  const prices = await readPriceList(db);
  const uploads = await uploadsNamed(db, items);
  const checked: CheckedItem[] = [];
  for (const item of items) {
    try {
      checked.push(await checkItem(services, caller, item, prices, uploads));
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      checked.push({ error: { code: err.code, message: err.message } });
    }
  }
  return checked;
}

/** Every upload the items name, read at once. */
async function uploadsNamed(db: DataSource, items: { type: ItemType; request: Record<string, unknown> }[]): Promise<Map<string, UploadRow>> {
  const ids = new Set<string>();
  for (const item of items) {
    for (const { image } of imagesOf(item.type, item.request)) if (image.data?.startsWith('upl_')) ids.add(image.data);
  }
  if (ids.size === 0) return new Map();
  const rows: UploadRow[] = await db.query(
    'SELECT id, input_key, format, width, height, expires_at <= now() AS expired, account_id FROM uploads WHERE id = ANY($1::text[])', [[...ids]]);
  return new Map(rows.map((row) => [row.id, row]));
}

/** The single image fields of each type's request (its schema checked them; other fields are not read). */
const IMAGE_FIELDS: Record<ItemType, string[]> = { photo: [], card: ['design_reference_image'], video: ['image', 'final_frame'], edit: [] };

/**
 * The image fields of an item's request that its type reads, with where each is (as its single request names it):
 * only those are rebuilt and stored, so that a field its type does not read is never looked at.
 */
function imagesOf(type: ItemType, request: Record<string, unknown>): { image: ImageInput; where: string; set(image: ImageInput): void }[] {
  const found: { image: ImageInput; where: string; set(image: ImageInput): void }[] = [];
  if (type === 'photo' || type === 'card') {
    const list = request.images as ImageInput[];
    list.forEach((image, i) => found.push({ image, where: `images[${i}]`, set: (next) => { list[i] = next; } }));
  }
  for (const field of IMAGE_FIELDS[type]) {
    const image = request[field] as ImageInput | undefined;
    if (image) found.push({ image, where: field, set: (next) => { request[field] = next; } });
  }
  return found;
}

async function checkItem(
  services: Pick<Services, 'db'>, caller: Caller, item: { type: ItemType; request: Record<string, unknown> }, prices: PriceList,
  uploads: Map<string, UploadRow>,
): Promise<CheckedItem> {
  const { request } = item;
  if (item.type === 'card') checkCardOrder(request as Parameters<typeof checkCardOrder>[0]);
  const sizes = new Map<string, { width: number; height: number }>();
  for (const { image, where, set } of imagesOf(item.type, request)) {
    // Rebuilt from what a client may send: `stored` is never taken from a request.
    if (image.url !== undefined) {
      set({ url: image.url, media_type: image.media_type });
    } else if (image.data!.startsWith('upl_')) {
      const upload = uploads.get(image.data!);
      if (!upload || upload.account_id !== caller.accountId) throw new AppError(400, 'upload_not_found', `${where}: upload ${image.data} does not exist`);
      if (upload.expired) throw new AppError(400, 'upload_expired', `${where}: upload ${image.data} has expired; upload the image again`);
      set({ stored: { key: upload.input_key, format: upload.format, width: upload.width, height: upload.height } });
      sizes.set(where, upload);
    } else {
      const checked = await checkImage(decodeBase64Image(image.data!, where), where, 'header');
      set({ data: image.data, media_type: image.media_type });
      sizes.set(where, checked);
    }
  }
  const video = sizes.get('image');
  if (item.type === 'video' && video && (video.width < MIN_VIDEO_SIDE || video.height < MIN_VIDEO_SIDE)) {
    throw new AppError(400, 'image_too_small', `image is ${video.width}x${video.height}; a video needs at least ${MIN_VIDEO_SIDE}x${MIN_VIDEO_SIDE}`);
  }
  if (item.type === 'edit') await editableSource(services, caller, request.action_id as number);
  return { request, price: priceOfItem(prices, item.type, request) };
}

function priceOfItem(prices: PriceList, type: ItemType, request: Record<string, unknown>): number {
  switch (type) {
    case 'photo': return priceOf(prices, { product: 'photo', resolution: request.resolution as '1K' | '2K' | '4K' });
    case 'card': return priceOf(prices, { product: 'card' });
    case 'video': return priceOf(prices, { product: 'video', durationSec: request.duration_sec as 5 | 10 });
    case 'edit': return priceOf(prices, { product: 'edit' });
  }
}
