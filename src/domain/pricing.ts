import { EntityManager } from 'typeorm';
import { Pricing } from '../db/entities';

export interface PriceList {
  generation: number;
  improvement: number;
  video_5sec: number;
  video_10sec: number;
}

/** Extra sparks for a 4K photo on top of `generation` (the contract's "4K + 2"). */
export const FOUR_K_SURCHARGE = 2;

export async function readPriceList(manager: EntityManager): Promise<PriceList> {
  const row = await manager.findOneByOrFail(Pricing, { id: 1 });
  return { generation: row.generation, improvement: row.improvement, video_5sec: row.video5sec, video_10sec: row.video10sec };
}

export function photoPrice(prices: PriceList, resolution: string): number {
  return prices.generation + (resolution === '4K' ? FOUR_K_SURCHARGE : 0);
}
