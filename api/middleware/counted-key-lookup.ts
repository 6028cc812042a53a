import type { DataSource } from 'typeorm';
import type { DefaultGrouping } from '../../src/db/entities/api-key';
import { prepared, preparedRow } from '../../src/db/prepared';
import { rateWindowAt } from './rate-limit';

/**
 * The key and the requests' places in its rate-limit window, in one statement: the key is found by the SHA-256 of
 * the secret among the keys not revoked, and only a key found there counts its requests ($3 of them at once).
 */
const KEY_AND_COUNT = prepared('api_key_and_rate_count', `
  WITH api_key AS (
    SELECT id, account_id, name, default_grouping FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL
  ), counted AS (
    INSERT INTO rate_limit_windows AS w (key_id, window_start, count)
    SELECT id, $2, $3 FROM api_key
    ON CONFLICT (key_id, window_start) DO UPDATE SET count = w.count + EXCLUDED.count
    RETURNING count
  )
  SELECT api_key.id, api_key.account_id, api_key.name, api_key.default_grouping, counted.count
    FROM api_key, counted`);

export interface KeyRow { id: number; account_id: number; name: string; default_grouping: DefaultGrouping }

/** A request of a valid key, counted: `used` is its number in the key's window, itself included. */
export interface CountedKey { key: KeyRow; window: number; used: number; nowSeconds: number }

interface Waiter { resolve(counted: CountedKey | undefined): void; reject(err: unknown): void }

/**
 * Finds API keys and counts their requests, one statement per key at a time in this process. Requests of a key that
 * arrive while its statement runs wait for the next one, which counts them all at once (`count + n`) and numbers
 * them in arrival order from the total it returns. Under load a busy key costs one statement for many requests, and
 * nothing is lost:
 * - the limit stays exact across processes: each statement adds its n atomically and takes the n numbers below the
 *   total it returns, so the numbers handed out by all processes are distinct and every request gets one;
 * - a request never rides on a statement that started before it arrived, so a key revoked (committed) before a
 *   request arrives is refused to that request, in every process, without a cache or a message to wait for.
 * Keys are held only as hashes, and only while their statement runs.
 */
export class CountedKeyLookup {
  /** Per key hash with a statement running: the requests waiting for the next one. */
  private readonly next = new Map<string, Waiter[]>();

  constructor(private readonly db: DataSource) {}

  lookup(keyHash: string): Promise<CountedKey | undefined> {
    return new Promise((resolve, reject) => {
      const waiting = this.next.get(keyHash);
      if (waiting) waiting.push({ resolve, reject });
      else this.run(keyHash, [{ resolve, reject }]);
    });
  }

  private run(keyHash: string, batch: Waiter[]): void {
    this.next.set(keyHash, []);
    const nowSeconds = Date.now() / 1000;
    const window = rateWindowAt(nowSeconds);
    preparedRow<KeyRow & { count: number }>(this.db, KEY_AND_COUNT, [keyHash, window, batch.length]).then((row) => {
      if (!row) {
        for (const waiter of batch) waiter.resolve(undefined);
        return;
      }
      const { count, ...key } = row;
      const first = count - batch.length + 1;
      batch.forEach((waiter, i) => waiter.resolve({ key, window, used: first + i, nowSeconds }));
    }, (err: unknown) => {
      for (const waiter of batch) waiter.reject(err);
    }).finally(() => {
      const waiting = this.next.get(keyHash)!;
      if (waiting.length > 0) this.run(keyHash, waiting);
      else this.next.delete(keyHash);
    });
  }
}
