/** Accounts, images, HTTP calls and money invariants for tests. */
import assert from 'node:assert/strict';
import sharp from 'sharp';
import type { DataSource } from 'typeorm';
import { createAccount } from '../../src/accounts/accounts';

export async function newAccount(db: DataSource, sparks = 20, name = 'test account') {
  return createAccount(db, name, sparks);
}

export async function jpegBase64(width = 400, height = 500, colour = '#2a6fdb'): Promise<string> {
  const bytes = await sharp({ create: { width, height, channels: 3, background: colour } }).jpeg().toBuffer();
  return bytes.toString('base64');
}

/** A photo of random noise (so each one is unique), in the given format. */
export async function noiseImage(format: 'jpeg' | 'png' | 'webp' = 'jpeg', width = 480, height = 360): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })[format]().toBuffer();
}

/**
 * The first half of an image, its header intact, as a broken upload or download leaves it (for WebP, the RIFF and
 * VP8 sizes are rewritten to match, else the header alone gives it away).
 */
export function truncatedImage(bytes: Buffer): Buffer {
  const cut = Buffer.from(bytes.subarray(0, Math.floor(bytes.length / 2)));
  if (cut.toString('latin1', 8, 16) === 'WEBPVP8 ') {
    cut.writeUInt32LE(cut.length - 8, 4);
    cut.writeUInt32LE(cut.length - 20, 16);
  }
  return cut;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A small HTTP client: JSON in, JSON (or text) out, never throws on a status. */
export function apiClient(baseUrl: string, apiKey?: string) {
  return async function call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}),
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed as T };
  };
}

export const V1 = '/api/v1/public';

/** The money invariants: balance equals the ledger, `held` equals the open holds, nothing negative. */
/** Each account's balance and held, beside what its ledger and its open holds say they must be. */
export async function moneyOf(db: DataSource, accountIds: number[]): Promise<{ id: number; balance: number; held: number; ledger: number; open_holds: number }[]> {
  return db.query(
    `SELECT a.id, a.balance, a.held,
            (SELECT COALESCE(SUM(amount), 0)::int FROM spark_ledger WHERE account_id = a.id) AS ledger,
            (SELECT COALESCE(SUM(amount), 0)::int FROM spark_holds WHERE account_id = a.id AND status = 'held') AS open_holds
       FROM accounts a WHERE a.id = ANY($1) ORDER BY a.id`, [accountIds]);
}

export async function assertMoneyConsistent(db: DataSource, accountId: number): Promise<{ balance: number; held: number }> {
  const [row] = await moneyOf(db, [accountId]);
  assert.equal(row.balance, row.ledger, 'balance equals the sum of the ledger');
  assert.equal(row.held, row.open_holds, 'held equals the sum of open holds');
  assert.ok(row.held >= 0 && row.held <= row.balance, 'holds are covered by the balance');
  return { balance: row.balance, held: row.held };
}

/** Runs `run` with `env` set in the process environment (an empty value reads as unset), then puts it back. */
export function withEnv<T>(env: Record<string, string>, run: () => T): T {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return run();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Waits, if need be, until at least `seconds` are left in the current rate-limit minute (calls that must share one). */
export async function clearOfRateWindowEdge(seconds: number): Promise<void> {
  const left = 60 - (Math.floor(Date.now() / 1000) % 60);
  if (left < seconds) await new Promise((r) => setTimeout(r, left * 1000 + 100));
}

/** Waits for a condition by re-checking it every `everyMs` (no fixed sleeps); fails with the last value seen. */
export async function eventually<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, everyMs));
    last = await probe();
  }
  return last;
}

/**
 * Writes a pending photo action straight into the read model (what the API does before starting a workflow),
 * optionally with its hold, for activity and workflow tests that start below the API.
 */
export async function placeAction(
  db: DataSource, accountId: number,
  options: { inputs?: string[]; hold?: number; params?: Record<string, unknown>; product?: 'photo' | 'card' | 'video' | 'edit' } = {},
): Promise<number> {
  const product = options.product ?? 'photo';
  const type = product === 'photo' || product === 'card' ? 'generate' : product;
  const [project] = await db.query(`INSERT INTO projects (account_id, source) VALUES ($1, 'api') RETURNING id`, [accountId]);
  const [card] = await db.query(
    `INSERT INTO cards (account_id, project_id, status, content_type, aspect_ratio) VALUES ($1, $2, 'pending', 'photo', '3:4') RETURNING id`,
    [accountId, project.id]);
  const params = {
    inputs: options.inputs ?? [], productName: 'Test product', categoryId: 'other', conceptId: 'other_in_use', locale: 'en',
    photoStyle: 'classic', aspectRatio: '3:4', resolution: '1K', ...options.params,
  };
  const [action] = await db.query(
    `INSERT INTO actions (account_id, project_id, card_id, type, product, status, price, params)
     VALUES ($1, $2, $3, $6, $7, 'pending', $4, $5) RETURNING id`, [accountId, project.id, card.id, options.hold ?? 0, params, type, product]);
  if (options.hold !== undefined) {
    const { holdSparks } = await import('../../src/billing/sparks');
    await db.transaction((m) => holdSparks(m, accountId, null, action.id, options.hold!));
  }
  return action.id;
}
