/**
 * `Idempotency-Key` records: a repeat within the window returns the first response and creates (and charges)
 * nothing. The key is claimed inside the transaction that records the action, so two requests arriving together
 * serialise on the key's primary key: the second waits, then reads the first one's answer. Reading the header and
 * answering a repeat over HTTP is `api/idempotency.ts`.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { IDEMPOTENCY_WINDOW_SECONDS } from '../housekeeping/retention';
import { AppError, generationUnavailable } from '../errors';

export interface IdempotencyClaim {
  accountId: number;
  /** What the key is scoped to besides the account: the endpoint or job type. */
  scope: string;
  key: string;
  /** Fingerprint of the request, to refuse a repeat with a different body. */
  requestHash: string;
}

export interface StoredResponse { status: number; body: unknown }

/** Thrown inside the transaction when the key is already taken; the handler answers with the stored response. */
export class IdempotentReplay extends Error {
  /** `inFlight`: the first request has committed but its workflow start is not settled yet. */
  constructor(readonly response: StoredResponse, readonly inFlight = false) {
    super('idempotent replay');
  }
}

interface KeyRow { request_hash: string; response_status: number; response_body: unknown; start_state: string | null }

/** The stored answer, unless the first request's workflow start is still in flight (then it is not an answer yet). */
function replayOrConflict(claim: IdempotencyClaim, row: KeyRow): StoredResponse & { inFlight: boolean } {
  if (row.request_hash !== claim.requestHash) {
    throw new AppError(409, 'idempotency_conflict', 'This Idempotency-Key was used with a different request in the last 5 minutes');
  }
  return { status: row.response_status, body: row.response_body, inFlight: row.start_state === 'starting' };
}

const KEY_ROW = `SELECT k.request_hash, k.response_status, k.response_body, a.start_state
                   FROM idempotency_keys k LEFT JOIN actions a ON a.id = k.action_id
                  WHERE k.account_id = $1 AND k.scope = $2 AND k.key = $3`;

/** The stored response of a fresh earlier request with this key, if any (the cheap check before any work). */
export async function findReplay(db: DataSource, claim: IdempotencyClaim): Promise<(StoredResponse & { inFlight: boolean }) | undefined> {
  const row = await sqlRow<KeyRow>(db.manager, `${KEY_ROW} AND k.created_at > now() - make_interval(secs => $4)`,
    [claim.accountId, claim.scope, claim.key, IDEMPOTENCY_WINDOW_SECONDS]);
  return row ? replayOrConflict(claim, row) : undefined;
}

/**
 * Waits (briefly) while the first request with this key is still starting its workflow: it ends confirmed (its
 * answer stands) or abandoned (the key is forgotten). Answers once either happened, false after `timeoutMs`.
 */
export async function awaitStartSettled(db: DataSource, claim: IdempotencyClaim, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await sqlRow<KeyRow>(db.manager, KEY_ROW, [claim.accountId, claim.scope, claim.key]);
    if (!row || row.start_state !== 'starting') return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Claims the key in the caller's transaction (taking over an expired claim), or throws IdempotentReplay with the
 * first response. A concurrent first request makes this wait until it commits or rolls back.
 */
export async function claimKey(m: EntityManager, claim: IdempotencyClaim): Promise<void> {
  const claimed = await sqlRow(m,
    `INSERT INTO idempotency_keys AS k (account_id, scope, key, request_hash, response_status, response_body)
     VALUES ($1, $2, $3, $4, 0, 'null')
     ON CONFLICT (account_id, scope, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, response_status = 0, response_body = 'null', created_at = now()
      WHERE k.created_at <= now() - make_interval(secs => $5)
     RETURNING key`,
    [claim.accountId, claim.scope, claim.key, claim.requestHash, IDEMPOTENCY_WINDOW_SECONDS]);
  if (claimed) return;
  const row = await sqlRow<KeyRow>(m, KEY_ROW, [claim.accountId, claim.scope, claim.key]);
  const { inFlight, ...response } = replayOrConflict(claim, row!);
  throw new IdempotentReplay(response, inFlight);
}

/** Stores the answer with the action it is about, in the transaction that created the action. */
export async function recordResponse(m: EntityManager, claim: IdempotencyClaim, response: StoredResponse, actionId: number): Promise<void> {
  await m.query('UPDATE idempotency_keys SET response_status = $4, response_body = $5, action_id = $6 WHERE account_id = $1 AND scope = $2 AND key = $3',
    [claim.accountId, claim.scope, claim.key, response.status, JSON.stringify(response.body), actionId]);
}

/** 503 for a repeat whose first request has committed but not settled its workflow start within the wait. */
export const keyInFlight = () => generationUnavailable('The first request with this Idempotency-Key is still being started; try again shortly');
