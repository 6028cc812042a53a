/**
 * Read-model moves of an action, each with its spark settlement in the same transaction. Activities run at least
 * once, so every move is a conditional update: repeating it changes nothing. Given a v2 job's id, each also moves
 * the job in the same transaction (the job workflow runs them as local activities: one step, not two).
 */
import { ActionEnd, closeAction } from '../src/actions/states';
import { settleHold } from '../src/billing/sparks';
import { moveJobRecord } from '../src/jobs/states';
import { sqlRow } from '../src/db/sql';
import { afterCommit } from '../src/db/after-commit';
import { actionsTotal } from '../src/metrics/registry';
import type { EntityManager } from 'typeorm';
import type { ActivityDeps } from './deps';

export type StartOutcome = 'started' | 'cancelled';
export type CompleteOutcome = 'completed' | 'cancelled';

/** How a v2 job ends when its action fails: `dead_letter` once its retryable attempts are spent. */
export interface JobFailure { jobId: string; status: 'failed' | 'dead_letter'; errorCode: string; retryable: boolean }

export function createActionLifecycleActivities({ db }: ActivityDeps) {
  return {
    /**
     * pending -> processing (and the job, if given, to claimed/routing). Answers `cancelled` (stop) when the action
     * was cancelled or is already closed, or its job already ended.
     */
    async startProcessing(actionId: number, jobId?: string): Promise<StartOutcome> {
      return db.transaction(async (m) => {
        const started = await startAction(m, actionId);
        if (started === 'started' && jobId && !(await moveJobRecord(m, jobId, { status: 'claimed', phase: 'routing' }))) return 'cancelled';
        return started;
      });
    },

    /**
     * Charges the hold and marks the action completed, atomically; the card's active version moves to it, and the
     * job, if given, to succeeded/postprocessing.
     */
    async completeAction(actionId: number, assetPath: string, jobId?: string): Promise<CompleteOutcome> {
      return db.transaction((m) => completeRendered(m, actionId, assetPath, jobId));
    },

    /** Releases the hold and marks the action cancelled (a cancel that reached a running render). */
    async cancelAction(actionId: number): Promise<'cancelled'> {
      await db.transaction(async (m) => {
        await settleHold(m, actionId, 'released');
        await closeAction(m, actionId, 'cancelled', null);
      });
      return 'cancelled';
    },

    /**
     * Releases the hold and marks the action failed with a message the integrator may read; the job, if given,
     * ends as `job.status` with the same message.
     */
    async failAction(actionId: number, errorMessage: string, job?: JobFailure): Promise<void> {
      await db.transaction(async (m) => {
        await settleHold(m, actionId, 'released');
        await closeAction(m, actionId, 'failed', errorMessage);
        if (job) {
          await moveJobRecord(m, job.jobId, { status: job.status, phase: 'failed', retryable: job.retryable, errorCode: job.errorCode, errorMessage });
        }
      });
    },

    /**
     * Ends an action whose render (`renderAction`) failed or was cancelled: releases the hold and closes the action
     * as `ending` says, unless the render completed and charged it first (a cancel that raced its last step).
     * Answers how the action really ended, so that the workflow reports and announces that.
     */
    async endAction(actionId: number, ending: { status: 'failed'; error: string } | { status: 'cancelled' }): Promise<ActionEnd> {
      return db.transaction(async (m) => {
        if ((await settleHold(m, actionId, 'released')) === 'released') {
          await closeAction(m, actionId, ending.status, ending.status === 'failed' ? ending.error : null);
        }
        return recordedEnd(m, actionId);
      });
    },
  };
}

/** pending -> processing in the caller's transaction; see `startProcessing`. */
export async function startAction(m: EntityManager, actionId: number): Promise<StartOutcome> {
  const moved = await sqlRow(m,
    `UPDATE actions SET status = 'processing', started_at = now(), updated_at = now()
      WHERE id = $1 AND status = 'pending' RETURNING card_id`, [actionId]);
  if (moved) {
    await m.query(`UPDATE cards SET status = 'processing', updated_at = now() WHERE id = $1 AND active_action_id IS NULL`, [moved.card_id]);
    return 'started';
  }
  const current = await sqlRow(m, 'SELECT status FROM actions WHERE id = $1', [actionId]);
  if (!current) throw new Error(`action ${actionId} not found`);
  // A retried start finds it processing: go on. Cancelled, or already closed (a duplicate or late
  // workflow): stop, so nothing is rendered twice or for free.
  return current.status === 'processing' ? 'started' : 'cancelled';
}

/** `completeAction` in the caller's transaction: the charge, the action, its card and its job, or `cancelled`. */
export async function completeRendered(m: EntityManager, actionId: number, assetPath: string, jobId?: string): Promise<CompleteOutcome> {
  const settled = await settleHold(m, actionId, 'charged');
  if (settled === 'released') {
    // Released meanwhile (cancelled, or failed by the API when the start looked lost): close it as such.
    await closeAction(m, actionId, 'cancelled', null);
    return 'cancelled';
  }
  const done = await sqlRow(m,
    `UPDATE actions SET status = 'completed', asset_path = $2, completed_at = now(), updated_at = now()
      WHERE id = $1 AND status IN ('pending', 'processing') RETURNING card_id, product, provider`, [actionId, assetPath]);
  if (done) {
    afterCommit(m, () => actionsTotal.inc({ product: done.product, provider: done.provider ?? 'none', outcome: 'completed' }));
    await m.query(
      `UPDATE cards SET status = 'completed', updated_at = now(),
              active_action_id = GREATEST(COALESCE(active_action_id, 0), $2)
        WHERE id = $1`, [done.card_id, actionId]);
  }
  if (jobId) await moveJobRecord(m, jobId, { status: 'succeeded', phase: 'postprocessing', retryable: false });
  return 'completed';
}

/** How a closed action ended, as its row records it (in the caller's transaction). */
export async function recordedEnd(m: EntityManager, actionId: number): Promise<ActionEnd> {
  const action = await sqlRow(m, 'SELECT status, asset_path, error_message FROM actions WHERE id = $1', [actionId]);
  if (action?.status === 'completed') return { status: 'completed', assetPath: action.asset_path };
  if (action?.status === 'failed') return { status: 'failed', error: action.error_message ?? 'Generation failed' };
  if (action?.status === 'cancelled') return { status: 'cancelled' };
  throw new Error(`action ${actionId} is not closed (${action?.status ?? 'missing'})`);
}
