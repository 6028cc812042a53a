import type { QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { type PreparedStatement, preparedRows } from './prepared';

/**
 * The answer of one batch: `answer(key, i)` is what the i-th call for `key` (in arrival order) gets. Called once
 * per call; whatever it throws rejects that call alone.
 */
export type BatchAnswer<K, R> = (key: K, index: number) => R;

/**
 * Calls gathered by key and answered in batches, at most `maxInFlight` batches at a time in this process. Calls
 * that arrive while those run wait for the next batch, which answers all of them with one `fetch` (given each key
 * once, with how many calls wait for it). Under load one round trip serves many calls, and none is stale:
 * - a call never rides on a batch that started before it arrived, so it reads what an unbatched read made on its
 *   arrival would (a row committed before the call is seen; a key revoked before it is refused);
 * - with nothing in flight a call starts its batch at once: alone, it waits for nothing.
 * A failed fetch rejects every call of its batch.
 */
export class Batcher<K, R> {
  /** The calls waiting for the next batch, by key, in arrival order. */
  private waiting = new Map<K, { resolve(value: R): void; reject(err: unknown): void }[]>();
  private running = 0;

  constructor(
    private readonly fetch: (calls: ReadonlyMap<K, number>) => Promise<BatchAnswer<K, R>>,
    private readonly maxInFlight = 2,
  ) {
    if (!(maxInFlight >= 1)) throw new Error(`a Batcher needs at least one batch in flight, got ${maxInFlight}`);
  }

  call(key: K): Promise<R> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      this.startNext();
    });
  }

  private startNext(): void {
    if (this.running >= this.maxInFlight || this.waiting.size === 0) return;
    const batch = this.waiting;
    this.waiting = new Map();
    this.running++;
    const counts = new Map<K, number>();
    for (const [key, waiters] of batch) counts.set(key, waiters.length);
    let fetched: Promise<BatchAnswer<K, R>>;
    try {
      fetched = this.fetch(counts);
    } catch (err) {
      fetched = Promise.reject(err); // thrown before its promise: still this batch's failure alone
    }
    fetched
      .then((answer) => {
        for (const [key, waiters] of batch) {
          waiters.forEach((waiter, i) => {
            try {
              waiter.resolve(answer(key, i));
            } catch (err) {
              waiter.reject(err);
            }
          });
        }
      }, (err: unknown) => {
        for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(err);
      })
      .finally(() => {
        this.running--;
        this.startNext();
      });
  }
}

/**
 * Rows of one prepared statement by key, batched (Batcher): the statement takes every key of a batch as one array
 * parameter (`WHERE id = ANY($1::int[])`) and returns each row with its key in `keyColumn`. Calls for one key in a
 * batch share its row: callers must treat rows as read-only. Keys must already fit the array's type (checked by the
 * route), or the statement would fail for the whole batch.
 */
export function batchedRows<K extends string | number, Row extends QueryResultRow>(
  db: DataSource, statement: PreparedStatement, keyColumn: keyof Row & string,
): (key: K) => Promise<Readonly<Row> | undefined> {
  const batcher = new Batcher<K, Row | undefined>(async (calls) => {
    const rows = await preparedRows<Row>(db, statement, [[...calls.keys()]]);
    const byKey = new Map(rows.map((row) => [row[keyColumn] as K, row]));
    return (key) => byKey.get(key);
  });
  return (key) => batcher.call(key);
}
