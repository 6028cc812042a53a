/** Accounts and API keys, as the operator CLI manages them (there is no key-management endpoint). */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { DataSource, type EntityManager, IsNull } from 'typeorm';
import { Account, ApiKey } from '../db/entities';
import { DefaultGrouping } from '../db/entities/api-key';
import { type BalanceView, grantSparks, readBalance, THIS_MONTH } from '../billing/sparks';
import { sqlRow, sqlRows } from '../db/sql';
import type { Caller } from '../services';
import type { SandboxScenario } from '../providers/sandbox';

export const MAX_ACTIVE_KEYS = 10;
/**
 * Postgres channel told the id of each key revoked (at commit): every API process ends that key's live-progress
 * streams (api/live/action-event-hub.ts); its next request is refused anyway, as every request looks its key up.
 */
export const KEY_REVOKED_CHANNEL = 'api_key_revoked';
/** A sandbox (test) key's secret starts with this; no live key does (`_` is not in KEY_ALPHABET). */
export const SANDBOX_KEY_PREFIX = 'ak_test_';
/** The accounts whose keys the dashboard of account $n lists: the account and its sandbox. */
const accountOrSandbox = (n: number) => `account_id IN (SELECT id FROM accounts WHERE id = $${n} OR sandbox_of = $${n})`;
/** accountOrSandbox for a query builder of keys `k`, the account as `:accountId`. */
const KEY_OF_ACCOUNT_OR_SANDBOX = 'k.accountId IN (SELECT a.id FROM accounts a WHERE a.id = :accountId OR a.sandbox_of = :accountId)';
/** Revokes the key of $1 (and of account $2 when given), announcing it on KEY_REVOKED_CHANNEL; answers its id if it was active. */
const REVOKE_KEY = `
  WITH revoked AS (
    UPDATE api_keys SET revoked_at = now(), updated_at = now()
     WHERE id = $1 AND ($2::int IS NULL OR ${accountOrSandbox(2)}) AND revoked_at IS NULL
    RETURNING id
  )
  SELECT id, pg_notify('${KEY_REVOKED_CHANNEL}', id::text) FROM revoked`;
const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export class OperatorError extends Error {}
/** The account has MAX_ACTIVE_KEYS active keys already. */
export class TooManyKeys extends OperatorError {}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export const isSandboxKey = (secretOrPrefix: string): boolean => secretOrPrefix.startsWith(SANDBOX_KEY_PREFIX);

/**
 * `ak_` (a sandbox key: `ak_test_`) + 40 characters from a 62-letter alphabet (about 238 bits), drawn without
 * modulo bias.
 */
export function generateApiKey(sandbox = false): string {
  let body = '';
  while (body.length < 40) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && body.length < 40) body += KEY_ALPHABET[byte % 62];
    }
  }
  return `${sandbox ? SANDBOX_KEY_PREFIX : 'ak_'}${body}`;
}

export interface CreatedKey { keyId: number; apiKey: string; key: KeyView }

/** An account with its first key (the operator CLI's `account:create`). */
export async function createAccount(db: DataSource, name: string, sparks: number): Promise<{ accountId: number } & CreatedKey> {
  return db.transaction(async (m) => {
    const accountId = await insertAccount(m, name, sparks);
    const key = await insertKey(m.getRepository(ApiKey), accountId, 'default', 'api_key_inbox');
    return { accountId, ...key };
  });
}

/** An account without keys, `sparks` granted, in the caller's transaction; answers its id. */
export async function insertAccount(m: EntityManager, name: string, sparks: number): Promise<number> {
  const account = await m.save(m.create(Account, { name, balance: 0, held: 0 }));
  if (sparks > 0) await grantSparks(m, account.id, sparks, `grant:account-create:${account.id}`);
  return account.id;
}

/**
 * Locks the account's row in the caller's transaction, serialising its per-account limits (keys, uploads, webhooks);
 * answers whether the account exists (with `live`: and is not a sandbox).
 */
export async function lockAccount(m: EntityManager, accountId: number, options: { live?: boolean } = {}): Promise<boolean> {
  const row = await sqlRow<{ sandbox_of: number | null }>(m, 'SELECT sandbox_of FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  return Boolean(row) && !(options.live && row!.sandbox_of !== null);
}

/** A test key's account: `sparks` are what a new sandbox is granted (SANDBOX_SPARKS). */
export interface SandboxChoice { sparks: number }

/**
 * A new key of the account; with `sandbox`, a test key (`ak_test_`) of the account's sandbox, which is made (and
 * granted `sandbox.sparks`) with its first key. The live account and its sandbox have MAX_ACTIVE_KEYS each.
 * `limitedLikeOthers` (a key a dashboard member makes: spend limits are the owners' to set): a live key starts with
 * the smallest monthly spend limit among the account's active keys, if any has one, so that a new key is no way
 * around the owners' limits; an owner may change it.
 */
export async function createKey(
  db: DataSource, accountId: number, name: string | undefined, grouping: DefaultGrouping,
  options: { sandbox?: SandboxChoice; limitedLikeOthers?: boolean } = {},
): Promise<CreatedKey> {
  return db.transaction(async (m) => {
    const account = await sqlRow<{ sandbox_of: number | null }>(m, 'SELECT sandbox_of FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
    if (!account) throw new OperatorError(`account ${accountId} not found`);
    if (account.sandbox_of !== null) throw new OperatorError(`account ${accountId} is the sandbox of account ${account.sandbox_of}: make its keys there`);
    const owner = options.sandbox ? await sandboxOf(m, accountId, options.sandbox.sparks) : accountId;
    const active = await m.countBy(ApiKey, { accountId: owner, revokedAt: IsNull() });
    if (active >= MAX_ACTIVE_KEYS) {
      throw new TooManyKeys(`account ${accountId} already has ${MAX_ACTIVE_KEYS} active ${options.sandbox ? 'sandbox ' : ''}keys`);
    }
    const label = options.sandbox ? 'test key' : 'key';
    const created = await insertKey(m.getRepository(ApiKey), owner, name ?? `${label} ${active + 1}`, grouping, Boolean(options.sandbox));
    if (!options.limitedLikeOthers || options.sandbox) return created;
    const limited = await sqlRow<{ monthly_spend_limit: number | null }>(m, `
      UPDATE api_keys SET monthly_spend_limit = (
        SELECT min(monthly_spend_limit) FROM api_keys WHERE account_id = $2 AND revoked_at IS NULL AND id <> $1)
       WHERE id = $1 RETURNING monthly_spend_limit`, [created.keyId, owner]);
    return { ...created, key: { ...created.key, monthly_spend_limit: limited!.monthly_spend_limit } };
  });
}

/** The sandbox account of (locked) account `accountId`, made with `sparks` granted when it has none yet. */
async function sandboxOf(m: EntityManager, accountId: number, sparks: number): Promise<number> {
  const found = await sqlRow<{ id: number }>(m, 'SELECT id FROM accounts WHERE sandbox_of = $1', [accountId]);
  if (found) return found.id;
  const created = await sqlRow<{ id: number }>(m,
    `INSERT INTO accounts (name, balance, held, sandbox_of) SELECT name || ' (sandbox)', 0, 0, id FROM accounts WHERE id = $1 RETURNING id`, [accountId]);
  if (sparks > 0) await grantSparks(m, created!.id, sparks, `grant:sandbox-create:${created!.id}`);
  return created!.id;
}

/** The sandbox's sparks of live account `accountId` (balance, available, holds), or null when it has no sandbox yet. */
export async function sandboxBalance(db: DataSource, accountId: number): Promise<BalanceView | null> {
  const sandbox = await sqlRow<{ id: number }>(db.manager, 'SELECT id FROM accounts WHERE sandbox_of = $1', [accountId]);
  return sandbox ? readBalance(db, sandbox.id) : null;
}

/**
 * Tops every sandbox's balance up to `sparks`, once per UTC day (the grant's reference names the day, so a second
 * run that day grants nothing); answers how many were topped up. Housekeeping runs it.
 */
export async function topUpSandboxes(db: DataSource, sparks: number): Promise<number> {
  const low = await sqlRows<{ id: number; balance: number; day: string }>(db.manager,
    `SELECT id, balance, day FROM accounts, (SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day) today
      WHERE sandbox_of IS NOT NULL AND balance < $1
        AND NOT EXISTS (SELECT 1 FROM spark_ledger WHERE reference = 'grant:sandbox-top-up:' || accounts.id || ':' || today.day)`, [sparks]);
  let toppedUp = 0;
  for (const { id, day } of low) {
    const granted = await db.transaction(async (m) => {
      const account = await sqlRow<{ balance: number }>(m, 'SELECT balance FROM accounts WHERE id = $1 FOR UPDATE', [id]);
      if (!account || account.balance >= sparks) return false;
      return grantSparks(m, id, sparks - account.balance, `grant:sandbox-top-up:${id}:${day}`); // false: topped up today already
    });
    if (granted) toppedUp++;
  }
  return toppedUp;
}

async function insertKey(
  repo: import('typeorm').Repository<ApiKey>, accountId: number, name: string, grouping: DefaultGrouping, sandbox = false,
): Promise<CreatedKey> {
  const apiKey = generateApiKey(sandbox);
  // A test key's prefix shows four characters past `ak_test_`, so that test keys can be told apart in a list.
  const row = await repo.save(repo.create({
    accountId, name, keyHash: hashApiKey(apiKey), prefix: apiKey.slice(0, sandbox ? 12 : 8), defaultGrouping: grouping, revokedAt: null, lastUsedAt: null,
  }));
  return { keyId: row.id, apiKey, key: keyView(row) };
}

export async function revokeKey(db: DataSource, keyId: number): Promise<void> {
  const revoked = await sqlRows(db.manager, REVOKE_KEY, [keyId, null]);
  if (revoked.length === 0) {
    const exists = await db.getRepository(ApiKey).existsBy({ id: keyId });
    if (!exists) throw new OperatorError(`key ${keyId} not found`);
  }
}

/** The account's keys for the operator's `key:list`, oldest first. */
export async function listKeys(db: DataSource, accountId: number) {
  const keys = await withSpend(db, await db.getRepository(ApiKey).createQueryBuilder('k').where(KEY_OF_ACCOUNT_OR_SANDBOX, { accountId })
    .orderBy('k.id', 'ASC').getMany());
  return keys.map(({ id, created_at, prefix, name, sandbox, default_grouping, revoked_at, monthly_spend_limit, spent_this_month }) =>
    ({ key_id: id, name, prefix, sandbox, default_grouping, created_at, revoked_at, monthly_spend_limit, spent_this_month }));
}

/** What each key holds or has charged this calendar month (UTC), beside the key. */
async function withSpend(db: DataSource, keys: ApiKey[]): Promise<KeyView[]> {
  if (keys.length === 0) return [];
  const rows: { key_id: number; sparks: number }[] = await db.query(
    `SELECT key_id, sparks FROM key_spend WHERE key_id = ANY($1::int[]) AND month = ${THIS_MONTH}`,
    [keys.map((k) => k.id)]);
  const spent = new Map(rows.map((r) => [r.key_id, r.sparks]));
  return keys.map((k) => keyView(k, spent.get(k.id) ?? 0));
}

/**
 * Sets the key's monthly spend limit in sparks (null removes it); with `accountId`, only a key of that account.
 * A limit below what the key already spent this month refuses its next hold, nothing else. False: no such key.
 */
export async function setKeySpendLimit(db: DataSource, keyId: number, limit: number | null, accountId?: number): Promise<boolean> {
  const updated = await sqlRow(db.manager,
    `UPDATE api_keys SET monthly_spend_limit = $2, updated_at = now() WHERE id = $1 AND ($3::int IS NULL OR ${accountOrSandbox(3)}) RETURNING id`,
    [keyId, limit, accountId ?? null]);
  return updated !== undefined;
}

/** A key as its account's dashboard shows it (the secret is never stored; `prefix` is its first 8 characters). */
export interface KeyView {
  id: number;
  name: string;
  prefix: string;
  /** A test key (`ak_test_`): its work runs on the sandbox renderer and uses the account's sandbox sparks. */
  sandbox: boolean;
  default_grouping: DefaultGrouping;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Sparks the key may hold or have charged per calendar month (UTC); null: no limit. */
  monthly_spend_limit: number | null;
  /** Sparks the key holds or has charged this month (UTC). */
  spent_this_month: number;
}

export const keyView = (k: ApiKey, spentThisMonth = 0): KeyView => ({
  id: k.id, name: k.name, prefix: k.prefix, sandbox: isSandboxKey(k.prefix), default_grouping: k.defaultGrouping, created_at: k.createdAt.toISOString(),
  last_used_at: k.lastUsedAt?.toISOString() ?? null, revoked_at: k.revokedAt?.toISOString() ?? null,
  monthly_spend_limit: k.monthlySpendLimit, spent_this_month: spentThisMonth,
});

/** The account's keys (its sandbox's test keys among them), active first, newest first. */
export async function accountKeys(db: DataSource, accountId: number): Promise<KeyView[]> {
  const keys = await db.getRepository(ApiKey).createQueryBuilder('k').where(KEY_OF_ACCOUNT_OR_SANDBOX, { accountId })
    .orderBy('k.revokedAt IS NOT NULL').addOrderBy('k.createdAt', 'DESC').addOrderBy('k.id', 'DESC').getMany();
  return withSpend(db, keys);
}

export async function accountKey(db: DataSource, accountId: number, keyId: number): Promise<KeyView | undefined> {
  const key = await db.getRepository(ApiKey).createQueryBuilder('k').where('k.id = :keyId', { keyId })
    .andWhere(KEY_OF_ACCOUNT_OR_SANDBOX, { accountId }).getOne();
  return key ? (await withSpend(db, [key]))[0] : undefined;
}

/** Renames a key or switches its `default_grouping` (a revoked key stays as it was); undefined when not the account's. */
export async function changeKey(
  db: DataSource, accountId: number, keyId: number, change: { name?: string; defaultGrouping?: DefaultGrouping },
): Promise<KeyView | undefined> {
  await db.query(`
    UPDATE api_keys SET name = coalesce($3, name), default_grouping = coalesce($4, default_grouping), updated_at = now()
     WHERE id = $1 AND ${accountOrSandbox(2)} AND revoked_at IS NULL`, [keyId, accountId, change.name ?? null, change.defaultGrouping ?? null]);
  return accountKey(db, accountId, keyId);
}

/** Revokes a key of the account (again: no change); undefined when not the account's. */
export async function revokeAccountKey(db: DataSource, accountId: number, keyId: number): Promise<KeyView | undefined> {
  await db.query(REVOKE_KEY, [keyId, accountId]);
  return accountKey(db, accountId, keyId);
}

/** Grants sparks; each call is one ledger event (`reference` defaults to a fresh one). */
export async function grantToAccount(db: DataSource, accountId: number, amount: number, reference = `grant:cli:${randomUUID()}`) {
  return db.transaction(async (m) => {
    const account = await sqlRow(m, 'SELECT id FROM accounts WHERE id = $1', [accountId]);
    if (!account) throw new OperatorError(`account ${accountId} not found`);
    return grantSparks(m, accountId, amount, reference);
  });
}

/** An active key of the account counted as the public API counts a request of it (Try it in the dashboard). */
export interface CountedKeyUse {
  id: number; name: string; default_grouping: DefaultGrouping; count: number; window: number; now_seconds: number; available: number;
}

/**
 * Counts one request of key `keyId` in its rate-limit window, as the API's key lookup does (and sets `last_used_at`
 * on the window's first), when it is an active key of `accountId`; answers the key, its count in the window (of
 * `windowSeconds`, on the database's clock) and the account's available sparks, or undefined.
 */
export async function countKeyUse(db: DataSource, accountId: number, keyId: number, windowSeconds: number): Promise<CountedKeyUse | undefined> {
  return sqlRow<CountedKeyUse>(db.manager, `
    WITH clock AS (
      SELECT extract(epoch FROM statement_timestamp())::float8 AS now_seconds
    ), api_key AS (
      SELECT id, account_id, name, default_grouping FROM api_keys WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL
    ), counted AS (
      INSERT INTO rate_limit_windows AS w (key_id, window_start, count)
      SELECT id, floor(clock.now_seconds / $3)::bigint, 1 FROM api_key, clock
      ON CONFLICT (key_id, window_start) DO UPDATE SET count = w.count + 1
      RETURNING key_id, count, window_start, (xmax = 0) AS opened
    ), used AS (
      UPDATE api_keys k SET last_used_at = statement_timestamp() FROM counted WHERE counted.opened AND k.id = counted.key_id
    )
    SELECT api_key.id, api_key.name, api_key.default_grouping, counted.count, counted.window_start::int AS window, clock.now_seconds,
           a.balance - a.held AS available
      FROM api_key JOIN counted ON counted.key_id = api_key.id JOIN accounts a ON a.id = api_key.account_id, clock`,
  [keyId, accountId, windowSeconds]);
}

/**
 * The caller that a key's stored work is attributed to when it runs later (a batch's items): the key as the auth
 * middleware reads it, revoked or not (the work was accepted while it was active), a test key's work on the
 * sandbox renderer with `scenario`. Its sparks are checked by each hold, not on arrival.
 */
export async function callerOfKey(m: EntityManager, keyId: number, scenario?: SandboxScenario): Promise<Caller | undefined> {
  const key = await sqlRow<{ account_id: number; name: string; default_grouping: DefaultGrouping; sandbox: boolean }>(m,
    'SELECT k.account_id, k.name, k.default_grouping, a.sandbox_of IS NOT NULL AS sandbox FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = $1', [keyId]);
  if (!key) return undefined;
  return {
    accountId: key.account_id, keyId, keyName: key.name, defaultGrouping: key.default_grouping, availableOnArrival: Number.MAX_SAFE_INTEGER,
    ...(key.sandbox ? { sandbox: { scenario } } : {}),
  };
}
