import type { DataSource } from 'typeorm';
import { prepared, preparedRow } from '../db/prepared';

export interface PriceList {
  generation: number;
  improvement: number;
  video_5sec: number;
  video_10sec: number;
}

/** Extra sparks for a 4K photo on top of `generation` (the contract's "4K + 2"). */
export const FOUR_K_SURCHARGE = 2;

const PRICE_LIST = prepared('price_list', 'SELECT generation, improvement, video_5sec, video_10sec FROM pricing WHERE id = 1');

/** How long a process uses the price list it read: an operator's change of the `pricing` row applies within this. */
export const PRICE_LIST_TTL_MS = 5_000;

const cached = new WeakMap<DataSource, { at: number; prices: Promise<PriceList> }>();

/**
 * The price list, read at most every PRICE_LIST_TTL_MS per process: every generation request prices itself with it
 * (the hold it makes is the price), and a read per request would be a round trip per request for a row that changes
 * rarely (`npm run admin -- pricing:set`). A failed read is not kept. `fresh`: read now (what GET /pricing answers).
 */
export function readPriceList(db: DataSource, options: { fresh?: boolean } = {}): Promise<PriceList> {
  const hit = cached.get(db);
  if (hit && !options.fresh && Date.now() - hit.at < PRICE_LIST_TTL_MS) return hit.prices;
  const prices = preparedRow<PriceList>(db, PRICE_LIST, []).then((row) => {
    if (!row) throw new Error('the pricing row is missing');
    return row;
  });
  cached.set(db, { at: Date.now(), prices });
  prices.catch(() => {
    if (cached.get(db)?.prices === prices) cached.delete(db);
  });
  return prices;
}

/** What a request holds (and charges if it succeeds): the one rule every accept and every quote prices by. */
export type Priced =
  | { product: 'photo'; resolution: string }
  | { product: 'card' }
  | { product: 'video'; durationSec: number }
  | { product: 'edit' };

export function priceOf(prices: PriceList, request: Priced): number {
  switch (request.product) {
    case 'photo': return prices.generation + (request.resolution === '4K' ? FOUR_K_SURCHARGE : 0);
    case 'card': return prices.generation;
    case 'video': return request.durationSec === 10 ? prices.video_10sec : prices.video_5sec;
    case 'edit': return prices.improvement;
  }
}
