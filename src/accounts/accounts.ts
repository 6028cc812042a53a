/** Accounts and API keys, as the operator CLI manages them (there is no key-management endpoint). */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { DataSource, type EntityManager, IsNull } from 'typeorm';
import { Account, ApiKey } from '../db/entities';
import { DefaultGrouping } from '../db/entities/api-key';
import { grantSparks } from '../billing/sparks';
import { sqlRow, sqlRows } from '../db/sql';

export const MAX_ACTIVE_KEYS = 10;
const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export class OperatorError extends Error {}

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

export interface CreatedKey { keyId: number; apiKey: string }

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
    if (active >= MAX_ACTIVE_KEYS) throw new OperatorError(`account ${accountId} already has ${MAX_ACTIVE_KEYS} active keys`);
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
  return { keyId: row.id, apiKey };
}

export async function revokeKey(db: DataSource, keyId: number): Promise<void> {
  const revoked = await sqlRows(db.manager,
    'UPDATE api_keys SET revoked_at = now(), updated_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING id', [keyId],
  );
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

/** Grants sparks; each call is one ledger event (`reference` defaults to a fresh one). */
export async function grantToAccount(db: DataSource, accountId: number, amount: number, reference = `grant:cli:${randomUUID()}`) {
  return db.transaction(async (m) => {
    const account = await sqlRow(m, 'SELECT id FROM accounts WHERE id = $1', [accountId]);
    if (!account) throw new OperatorError(`account ${accountId} not found`);
    return grantSparks(m, accountId, amount, reference);
  });
}
