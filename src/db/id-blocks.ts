/**
 * Ids taken from their tables' sequences ahead of the rows, a block at a time per process: the row's id is known
 * before the statement that writes it (so the answer stored with an `Idempotency-Key` can be written by that same
 * statement), and a block of ids costs one round trip for many requests. An id is unique forever, like any
 * sequence value; ids of different processes interleave, so an id says nothing about when its row was made
 * (`created_at` does), and an id taken by a request that fails is never used (as with a rolled-back insert).
 */
import type { DataSource } from 'typeorm';
import { prepared, preparedRows } from './prepared';

/** The tables whose ids are taken ahead (their `serial` sequences). */
export type IdTable = 'actions' | 'cards' | 'projects';

const BLOCK = 50;

const NEXT_IDS = prepared('next_ids', 'SELECT nextval(pg_get_serial_sequence($1, \'id\'))::int AS id FROM generate_series(1, $2)');

export class IdBlocks {
  private readonly free = new Map<IdTable, number[]>();
  private readonly refills = new Map<IdTable, Promise<void>>();

  constructor(private readonly db: DataSource, private readonly block = BLOCK) {}

  /** The next id of `table`'s sequence that this process holds (a new block when it has none left). */
  async next(table: IdTable): Promise<number> {
    for (;;) {
      const id = this.free.get(table)?.shift();
      if (id !== undefined) return id;
      await this.refill(table);
    }
  }

  private refill(table: IdTable): Promise<void> {
    let running = this.refills.get(table);
    if (!running) {
      running = preparedRows<{ id: number }>(this.db, NEXT_IDS, [table, this.block])
        .then((rows) => {
          const free = this.free.get(table) ?? [];
          free.push(...rows.map((r) => r.id));
          this.free.set(table, free);
        })
        .finally(() => this.refills.delete(table));
      this.refills.set(table, running);
    }
    return running;
  }
}

const blocksOf = new WeakMap<DataSource, IdBlocks>();

/** The process's id blocks for `db` (one per data source). */
export function idBlocks(db: DataSource): IdBlocks {
  let blocks = blocksOf.get(db);
  if (!blocks) blocksOf.set(db, (blocks = new IdBlocks(db)));
  return blocks;
}
