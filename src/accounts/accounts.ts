/** Accounts and API keys, as the operator CLI manages them (there is no key-management endpoint). */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { DataSource, type EntityManager, IsNull } from 'typeorm';
import { Account, ApiKey } from '../db/entities';
import { DefaultGrouping } from '../db/entities/api-key';
import { grantSparks } from '../billing/sparks';
import { sqlRow, sqlRows } from '../db/sql';

export const MAX_ACTIVE_KEYS = 10;
/**
 * Postgres channel told the id of each key revoked (at commit): every API process ends that key's live-progress
 * streams (api/live/action-event-hub.ts); its next request is refused anyway, as every request looks its key up.
 */
export const KEY_REVOKED_CHANNEL = 'api_key_revoked';
/** Revokes the key of $1 (and of account $2 when given), announcing it on KEY_REVOKED_CHANNEL; answers its id if it was active. */
const REVOKE_KEY = `
  WITH revoked AS (
    UPDATE api_keys SET revoked_at = now(), updated_at = now()
     WHERE id = $1 AND ($2::int IS NULL OR account_id = $2) AND revoked_at IS NULL
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

/** `ak_` + 40 characters from a 62-letter alphabet (about 238 bits), drawn without modulo bias. */
export function generateApiKey(): string {
  let body = '';
  while (body.length < 40) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && body.length < 40) body += KEY_ALPHABET[byte % 62];
    }
  }
  return `ak_${body}`;
}

export interface CreatedKey { keyId: number; apiKey: string; key: KeyView }

export async function createAccount(db: DataSource, name: string, sparks: number): Promise<{ accountId: number } & CreatedKey> {
  return db.transaction(async (m) => {
    const account = await m.save(m.create(Account, { name, balance: 0, held: 0 }));
    if (sparks > 0) await grantSparks(m, account.id, sparks, `grant:account-create:${account.id}`);
    const key = await insertKey(m.getRepository(ApiKey), account.id, 'default', 'api_key_inbox');
    return { accountId: account.id, ...key };
  });
}

/**
 * Locks the account's row in the caller's transaction, serialising its per-account limits (keys, uploads, webhooks);
 * answers whether the account exists.
 */
export async function lockAccount(m: EntityManager, accountId: number): Promise<boolean> {
  return Boolean(await sqlRow(m, 'SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [accountId]));
}

export async function createKey(
  db: DataSource, accountId: number, name: string | undefined, grouping: DefaultGrouping,
): Promise<CreatedKey> {
  return db.transaction(async (m) => {
    if (!(await lockAccount(m, accountId))) throw new OperatorError(`account ${accountId} not found`);
    const active = await m.countBy(ApiKey, { accountId, revokedAt: IsNull() });
    if (active >= MAX_ACTIVE_KEYS) throw new TooManyKeys(`account ${accountId} already has ${MAX_ACTIVE_KEYS} active keys`);
    return insertKey(m.getRepository(ApiKey), accountId, name ?? `key ${active + 1}`, grouping);
  });
}

async function insertKey(
  repo: import('typeorm').Repository<ApiKey>, accountId: number, name: string, grouping: DefaultGrouping,
): Promise<CreatedKey> {
  const apiKey = generateApiKey();
  const row = await repo.save(repo.create({
    accountId, name, keyHash: hashApiKey(apiKey), prefix: apiKey.slice(0, 8), defaultGrouping: grouping, revokedAt: null,
  }));
  const key: KeyView = {
    id: row.id, name: row.name, prefix: row.prefix, default_grouping: row.defaultGrouping, created_at: row.createdAt.toISOString(),
    last_used_at: null, revoked_at: null,
  };
  return { keyId: row.id, apiKey, key };
}

export async function revokeKey(db: DataSource, keyId: number): Promise<void> {
  const revoked = await sqlRows(db.manager, REVOKE_KEY, [keyId, null]);
  if (revoked.length === 0) {
    const exists = await db.getRepository(ApiKey).existsBy({ id: keyId });
    if (!exists) throw new OperatorError(`key ${keyId} not found`);
  }
}

export async function listKeys(db: DataSource, accountId: number) {
  const keys = await db.getRepository(ApiKey).find({ where: { accountId }, order: { id: 'ASC' } });
  return keys.map((k) => ({
    key_id: k.id, name: k.name, prefix: k.prefix, default_grouping: k.defaultGrouping,
    created_at: k.createdAt.toISOString(), revoked_at: k.revokedAt?.toISOString() ?? null,
  }));
}

/** A key as its account's dashboard shows it (the secret is never stored; `prefix` is its first 8 characters). */
export interface KeyView {
  id: number;
  name: string;
  prefix: string;
  default_grouping: DefaultGrouping;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const KEY_VIEW = `id, name, prefix, default_grouping, created_at, last_used_at, revoked_at`;
const keyView = (row: Omit<KeyView, 'created_at' | 'last_used_at' | 'revoked_at'> & { created_at: Date; last_used_at: Date | null; revoked_at: Date | null }): KeyView => ({
  ...row, created_at: row.created_at.toISOString(), last_used_at: row.last_used_at?.toISOString() ?? null, revoked_at: row.revoked_at?.toISOString() ?? null,
});

/** The account's keys, active first, newest first. */
export async function accountKeys(db: DataSource, accountId: number): Promise<KeyView[]> {
  const rows = await sqlRows(db.manager, `SELECT ${KEY_VIEW} FROM api_keys WHERE account_id = $1 ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC`, [accountId]);
  return rows.map((r) => keyView(r as Parameters<typeof keyView>[0]));
}

export async function accountKey(db: DataSource, accountId: number, keyId: number): Promise<KeyView | undefined> {
  const row = await sqlRow(db.manager, `SELECT ${KEY_VIEW} FROM api_keys WHERE id = $1 AND account_id = $2`, [keyId, accountId]);
  return row && keyView(row as Parameters<typeof keyView>[0]);
}

/** Renames a key or switches its `default_grouping` (a revoked key stays as it was); undefined when not the account's. */
export async function changeKey(
  db: DataSource, accountId: number, keyId: number, change: { name?: string; defaultGrouping?: DefaultGrouping },
): Promise<KeyView | undefined> {
  const row = await sqlRow(db.manager, `
    UPDATE api_keys SET name = coalesce($3, name), default_grouping = coalesce($4, default_grouping), updated_at = now()
     WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL
    RETURNING ${KEY_VIEW}`, [keyId, accountId, change.name ?? null, change.defaultGrouping ?? null]);
  return row ? keyView(row as Parameters<typeof keyView>[0]) : accountKey(db, accountId, keyId);
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
