/**
 * `Idempotency-Key` records: a repeat within the window returns the first response and creates (and charges)
 * nothing. The key is claimed inside the transaction that records the action, so two requests arriving together
 * serialise on the key's primary key: the second waits, then reads the first one's answer. Reading the header and
 * answering a repeat over HTTP is `api/idempotency.ts`.
 */
import type { DataSource } from 'typeorm';
import type { CompoundStatement } from '../db/statement';
import { confirmStart } from '../actions/lifecycle';
import { actionWorkflowId, jobWorkflowId } from '../temporal/contract';
import { workflowState } from '../temporal/workflow-state';
import type { Services } from '../services';
import { sqlRow } from '../db/sql';
import { prepared, preparedRow } from '../db/prepared';
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

interface KeyRow {
  request_hash: string; response_status: number; response_body: unknown;
  action_id: number | null; start_state: string | null; job_id: string | null;
}

/** The stored answer, unless the first request's workflow start is still in flight (then it is not an answer yet). */
function replayOrConflict(claim: IdempotencyClaim, row: KeyRow): StoredResponse & { inFlight: boolean } {
  if (row.request_hash !== claim.requestHash) {
    throw new AppError(409, 'idempotency_conflict', 'This Idempotency-Key was used with a different request in the last 5 minutes');
  }
  return { status: row.response_status, body: row.response_body, inFlight: row.start_state === 'starting' };
}

const KEY_ROW = `SELECT k.request_hash, k.response_status, k.response_body, k.action_id, a.start_state, j.id AS job_id
                   FROM idempotency_keys k LEFT JOIN actions a ON a.id = k.action_id LEFT JOIN jobs j ON j.action_id = k.action_id
                  WHERE k.account_id = $1 AND k.scope = $2 AND k.key = $3`;

/** A fresh key's row: asked by every request that sends a key, so prepared once per connection. */
const FRESH_KEY_ROW = prepared('idempotency_fresh_key_row', `${KEY_ROW} AND k.created_at > now() - make_interval(secs => $4)`);

/** The stored response of a fresh earlier request with this key, if any (the cheap check before any work). */
export async function findReplay(db: DataSource, claim: IdempotencyClaim): Promise<(StoredResponse & { inFlight: boolean }) | undefined> {
  const row = await preparedRow<KeyRow>(db, FRESH_KEY_ROW, [claim.accountId, claim.scope, claim.key, IDEMPOTENCY_WINDOW_SECONDS]);
  return row ? replayOrConflict(claim, row) : undefined;
}

/**
 * Waits (briefly) while the first request with this key may still be starting its workflow. Its action is accepted
 * once the workflow exists: Temporal is asked, and the answer recorded (`started`) so nobody asks again. It may also
 * be abandoned (the key is forgotten: a repeat is a new request). Answers once either happened, false after
 * `timeoutMs`.
 */
export async function awaitStartSettled({ db, temporal }: Pick<Services, 'db' | 'temporal'>, claim: IdempotencyClaim, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let askAt = 0;
  for (;;) {
    const row = await sqlRow<KeyRow>(db.manager, KEY_ROW, [claim.accountId, claim.scope, claim.key]);
    if (!row || row.start_state !== 'starting') return true;
    if (Date.now() >= askAt) {
      // At most once a second; Temporal away (or slow) is not an answer: keep waiting, then 503 (keyInFlight).
      askAt = Date.now() + 1000;
      const workflowId = row.job_id ? jobWorkflowId(row.job_id) : actionWorkflowId(row.action_id!);
      const exists = await workflowState(temporal, workflowId).then((state) => state.kind !== 'missing', () => false);
      if (exists) {
        await confirmStart(db.manager, row.action_id!);
        return true;
      }
    }
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The claim of the key, as the first part (`claimed`) of the statement that accepts the action: it takes the key
 * (or an expired claim of it) with the answer and the action it is about, and answers one row; a live claim of the
 * key answers none, and the statement's other parts, which read `claimed`, then write nothing. A concurrent first
 * request with the key makes it wait until that one commits or rolls back. Without a key, `claimed` is one row.
 */
export function claimPart(statement: CompoundStatement, claim: IdempotencyClaim | undefined, response: StoredResponse, actionId: number): string {
  if (!claim) return 'SELECT 1 AS claimed';
  const p = (value: unknown) => statement.param(value);
  return `INSERT INTO idempotency_keys AS k (account_id, scope, key, request_hash, response_status, response_body, action_id)
    VALUES (${p(claim.accountId)}, ${p(claim.scope)}, ${p(claim.key)}, ${p(claim.requestHash)}, ${p(response.status)}, ${p(JSON.stringify(response.body))}::jsonb, ${p(actionId)})
    ON CONFLICT (account_id, scope, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
           action_id = EXCLUDED.action_id, created_at = now()
     WHERE k.created_at <= now() - make_interval(secs => ${p(IDEMPOTENCY_WINDOW_SECONDS)})
    RETURNING 1 AS claimed`;
}

/** Why a claim took nothing: the first request's answer (IdempotentReplay), or 409 for another request with the key. */
export async function refusedClaim(db: DataSource, claim: IdempotencyClaim): Promise<IdempotentReplay> {
  const row = await sqlRow<KeyRow>(db.manager, KEY_ROW, [claim.accountId, claim.scope, claim.key]);
  if (!row) return new IdempotentReplay({ status: 0, body: null }, true); // forgotten meanwhile (an abandoned start): try again
  const { inFlight, ...response } = replayOrConflict(claim, row);
  return new IdempotentReplay(response, inFlight);
}

/** 503 for a repeat whose first request has committed but not settled its workflow start within the wait. */
export const keyInFlight = () => generationUnavailable('The first request with this Idempotency-Key is still being started; try again shortly');
