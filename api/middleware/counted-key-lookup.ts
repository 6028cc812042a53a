import type { DataSource } from 'typeorm';
import type { DefaultGrouping } from '../../src/db/entities/api-key';
import { Batcher } from '../../src/db/batcher';
import { prepared, preparedRows } from '../../src/db/prepared';
import { RATE_LIMIT_WINDOW_SECONDS } from '../../src/housekeeping/retention';
import type { CountedRequest } from './rate-limit';

/**
 * Keys and their requests' places in their rate-limit windows, in one statement for any number of keys: each key is
 * found by the SHA-256 of its secret among the keys not revoked, and only a key found there counts its requests
 * ($3: how many, per key). The account's available sparks come along (a read, no lock). The first request of a key
 * in a window (the one that makes the window's row) sets the key's `last_used_at`: the dashboard's "last used", to
 * the window, for one write a minute per key. Rows are upserted in key id order, so two processes' statements lock them in the same order.
 * The window ($2: its length in seconds) is taken from the database's clock, the one clock every API process
 * shares: a host whose clock is off would otherwise count into a window of its own for part of every minute.
 */
const KEYS_AND_COUNTS = prepared('api_keys_and_rate_counts', `
  WITH clock AS (
    SELECT extract(epoch FROM statement_timestamp())::float8 AS now_seconds
  ), sent AS (
    SELECT key_hash, n FROM unnest($1::text[], $3::int[]) AS s(key_hash, n)
  ), api_key AS (
    SELECT k.id, k.account_id, k.name, k.default_grouping, k.key_hash, sent.n
      FROM sent JOIN api_keys k ON k.key_hash = sent.key_hash AND k.revoked_at IS NULL
  ), counted AS (
    INSERT INTO rate_limit_windows AS w (key_id, window_start, count)
    SELECT id, floor(clock.now_seconds / $2)::bigint, n FROM api_key, clock ORDER BY id
    ON CONFLICT (key_id, window_start) DO UPDATE SET count = w.count + EXCLUDED.count
    RETURNING key_id, count, window_start, (xmax = 0) AS opened
  ), used AS (
    UPDATE api_keys k SET last_used_at = statement_timestamp() FROM counted WHERE counted.opened AND k.id = counted.key_id
  )
  SELECT api_key.key_hash, api_key.id, api_key.account_id, api_key.name, api_key.default_grouping, counted.count,
         counted.window_start::int AS window, clock.now_seconds, a.balance - a.held AS available
    FROM api_key JOIN counted ON counted.key_id = api_key.id JOIN accounts a ON a.id = api_key.account_id, clock`);

/** A key found, with its account's sparks available (balance - held) as the statement read them. */
export interface KeyRow { id: number; account_id: number; name: string; default_grouping: DefaultGrouping; available: number }

/** A request of a valid key, counted: `used` is its number in the key's window, itself included. */
export interface CountedKey extends CountedRequest { key: KeyRow }

/**
 * Finds API keys and counts their requests in batches (src/db/batcher.ts: at most two statements at a time in this
 * process; requests that arrive while those run wait for the next one). A statement finds all its keys and counts
 * each key's requests at once (`count + n`), numbering them in arrival order from the total it returns. Under load a
 * statement (and its one write transaction) serves many requests, and nothing is lost:
 * - the limit stays exact across processes: each statement adds its n atomically and takes the n numbers below the
 *   total it returns, so the numbers handed out by all processes are distinct and every request gets one;
 * - a request never rides on a statement that started before it arrived, so a key revoked (committed) before a
 *   request arrives is refused to that request, in every process, without a cache or a message to wait for.
 * Keys are held only as hashes, and only until their statement answers.
 */
export class CountedKeyLookup {
  private readonly batcher: Batcher<string, CountedKey | undefined>;

  constructor(db: DataSource) {
    this.batcher = new Batcher(async (calls) => {
      const hashes = [...calls.keys()];
      const rows = await preparedRows<KeyRow & { key_hash: string; count: number; window: number; now_seconds: number }>(
        db, KEYS_AND_COUNTS, [hashes, RATE_LIMIT_WINDOW_SECONDS, hashes.map((h) => calls.get(h)!)],
      );
      const found = new Map(rows.map(({ key_hash: keyHash, count, window, now_seconds: nowSeconds, ...key }) =>
        [keyHash, { key, window, nowSeconds, first: count - calls.get(keyHash)! + 1 }]));
      return (keyHash, i) => {
        const counted = found.get(keyHash);
        return counted && { key: counted.key, window: counted.window, nowSeconds: counted.nowSeconds, used: counted.first + i }; // none: unknown or revoked
      };
    });
  }

  lookup(keyHash: string): Promise<CountedKey | undefined> {
    return this.batcher.call(keyHash);
  }
}
