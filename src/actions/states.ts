/**
 * Closing moves of an action's read model, shared by the workflow's activities, the API's cancels and the
 * reconciler. Every transaction that settles a hold and moves an action takes its row locks in one order: the
 * spark hold, then the action, then (through the statements that follow) its card and its job. Two such
 * transactions on one action therefore queue; they never deadlock.
 */
import type { EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { settleHold } from '../billing/sparks';
import { afterCommit } from '../db/after-commit';
import { actionsTotal, jobsTotal } from '../metrics/registry';

type OpenStatus = 'pending' | 'processing';
export const OPEN_ACTION_STATUSES: readonly OpenStatus[] = ['pending', 'processing'];

/** How an action ended, as its workflow answers it. */
export type ActionEnd = { status: 'completed'; assetPath: string } | { status: 'failed'; error: string } | { status: 'cancelled' };

/** The message of an action whose workflow never started (Temporal unreachable, or the API died in between). */
export const START_FAILED_MESSAGE = 'Generation was unavailable';

/**
 * Locks the action's hold, then the action, in the order above; answers the action's current state. Call it
 * first in a transaction that is about to settle and close an action from outside its workflow.
 */
export async function lockForSettlement(m: EntityManager, actionId: number): Promise<{ status: string; startState: string } | undefined> {
  await m.query('SELECT 1 FROM spark_holds WHERE action_id = $1 FOR UPDATE', [actionId]);
  const row = await sqlRow(m, 'SELECT status, start_state FROM actions WHERE id = $1 FOR UPDATE', [actionId]);
  return row && { status: row.status, startState: row.start_state };
}

/**
 * Ends an action without a result (failed or cancelled) if it is still in one of `from`; answers whether it
 * moved. Its card shows the outcome only while the card has no completed version. Spark holds are the caller's
 * business (settle them in the same transaction, hold first).
 */
export async function closeAction(
  m: EntityManager, actionId: number, status: 'failed' | 'cancelled', errorMessage: string | null,
  from: readonly OpenStatus[] = OPEN_ACTION_STATUSES,
): Promise<boolean> {
  const closed = await sqlRow(m,
    `UPDATE actions SET status = $2, error_message = $3, completed_at = now(), updated_at = now()
      WHERE id = $1 AND status = ANY($4) RETURNING card_id, product, provider`, [actionId, status, errorMessage, from]);
  if (closed) {
    afterCommit(m, () => actionsTotal.inc({ product: closed.product, provider: closed.provider ?? 'none', outcome: status }));
    await m.query(`UPDATE cards SET status = $2, updated_at = now() WHERE id = $1 AND active_action_id IS NULL`, [closed.card_id, status]);
  }
  return Boolean(closed);
}

/**
 * Releases the hold and closes the action, and its v2 job if it has one, in the caller's transaction with the
 * locks in order. A job whose action was completed (charged) is left for its workflow to finish.
 */
export async function releaseAndClose(
  m: EntityManager, actionId: number, outcome: 'failed' | 'cancelled', errorMessage: string | null,
  job?: { errorCode: string; retryable: boolean },
): Promise<boolean> {
  await lockForSettlement(m, actionId);
  return releaseAndCloseLocked(m, actionId, outcome, errorMessage, job);
}

/** releaseAndClose for a caller that already holds the settlement locks. */
async function releaseAndCloseLocked(
  m: EntityManager, actionId: number, outcome: 'failed' | 'cancelled', errorMessage: string | null,
  job?: { errorCode: string; retryable: boolean },
): Promise<boolean> {
  await settleHold(m, actionId, 'released');
  const closed = await closeAction(m, actionId, outcome, errorMessage);
  const closedJob = await sqlRow(m,
    `UPDATE jobs SET status = $2, phase = 'failed', completed_at = now(), updated_at = now(),
            retryable = COALESCE($3, retryable), error_code = COALESCE($4, error_code), error_message = COALESCE($5, error_message)
      WHERE action_id = $1 AND status NOT IN ('succeeded', 'failed', 'dead_letter', 'cancelled')
        AND NOT EXISTS (SELECT 1 FROM actions WHERE id = $1 AND status = 'completed')
      RETURNING type`,
    [actionId, outcome, job?.retryable ?? null, job?.errorCode ?? null, job ? errorMessage : null]); // a cancel keeps the last error
  if (closedJob) afterCommit(m, () => jobsTotal.inc({ type: closedJob.type, outcome }));
  return closed;
}

/**
 * Gives up on an action whose workflow never started: it was never accepted, so its hold is released, it fails,
 * its job fails, and its Idempotency-Key is forgotten (a repeat is a new request). Only a start still in flight
 * (`starting`) is abandoned; whoever moves it first, the API's confirmation or this, wins.
 */
export async function abandonStart(m: EntityManager, actionId: number): Promise<boolean> {
  await lockForSettlement(m, actionId);
  const moved = await sqlRow(m, `UPDATE actions SET start_state = 'abandoned' WHERE id = $1 AND start_state = 'starting' RETURNING id`, [actionId]);
  if (!moved) return false;
  await releaseAndCloseLocked(m, actionId, 'failed', START_FAILED_MESSAGE, { errorCode: 'generation_unavailable', retryable: true });
  await m.query('DELETE FROM idempotency_keys WHERE action_id = $1', [actionId]);
  return true;
}

/** Marks an action's workflow as started; answers false when the start was abandoned meanwhile. */
export async function confirmStart(m: EntityManager, actionId: number): Promise<boolean> {
  const row = await sqlRow(m,
    `UPDATE actions SET start_state = 'started' WHERE id = $1 AND start_state IN ('starting', 'started') RETURNING id`, [actionId]);
  return Boolean(row);
}
