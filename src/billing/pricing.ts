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

/** Read on every generation request (it sets the hold), so a lean prepared read; the row always exists. */
const PRICE_LIST = prepared('price_list', 'SELECT generation, improvement, video_5sec, video_10sec FROM pricing WHERE id = 1');

export async function readPriceList(db: DataSource): Promise<PriceList> {
  const row = await preparedRow<PriceList>(db, PRICE_LIST, []);
  if (!row) throw new Error('the pricing row is missing');
  return row;
}

export function photoPrice(prices: PriceList, resolution: string): number {
  return prices.generation + (resolution === '4K' ? FOUR_K_SURCHARGE : 0);
}
