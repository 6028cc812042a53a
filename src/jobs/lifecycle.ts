/** v2 job vocabulary: statuses, phases, the polling hints derived from them, and the one conditional move of a job. */
import type { EntityManager } from 'typeorm';
import type { CompoundStatement } from '../db/statement';
import { sqlRow, sqlRows } from '../db/sql';
import { afterCommit } from '../db/after-commit';
import { jobsTotal } from '../metrics/registry';

export const JOB_STATUSES = ['queued', 'claimed', 'running', 'retry_scheduled', 'succeeded', 'failed', 'dead_letter', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'dead_letter', 'cancelled'];

export const JOB_PHASES = ['queued', 'routing', 'provider_reserved', 'provider_running', 'finalizing', 'postprocessing', 'completed', 'failed'] as const;
export type JobPhase = (typeof JOB_PHASES)[number];

/** Photos and edits are jobs of their own (`/jobs/generate`, `/jobs/edit`); cards and videos are jobs as batch items. */
export const JOB_TYPES = ['generation.execute', 'edit.execute', 'card.execute', 'video.execute'] as const;
export type JobType = (typeof JOB_TYPES)[number];

/**
 * Seconds until a poll is worth it: the provider's typical remaining time while it renders, the backoff left
 * while a retry is scheduled, a second or two around the short steps; null once the job is terminal.
 */
export function checkAgainInSec(
  job: { status: JobStatus; phase: string; next_attempt_at: Date | null; started_at: Date | null },
  typicalRenderSec: number, now = Date.now(),
): number | null {
  if (TERMINAL_JOB_STATUSES.includes(job.status)) return null;
  if (job.status === 'retry_scheduled' && job.next_attempt_at) return Math.max(1, Math.ceil((job.next_attempt_at.getTime() - now) / 1000));
  switch (job.phase) {
    case 'provider_running': {
      const elapsed = job.started_at ? (now - job.started_at.getTime()) / 1000 : 0;
      return Math.max(1, Math.ceil(typicalRenderSec - elapsed));
    }
    case 'queued':
    case 'routing':
    case 'provider_reserved':
      return 2;
    default:
      return 1;
  }
}

/**
 * Every statement that moves a job (`$1`: its id) starts with this: the action's row is locked first (the house
 * order: hold, action, card, job), as the event trigger of `jobs` locks it too (migration ActionEvents); taken after
 * the job's row, it could deadlock with a cancel that holds the action. Such a statement ends its WHERE clause with
 * ACTION_OF_JOB_IS_LOCKED, so that the lock is taken before the job's row is.
 */
const ACTION_OF_JOB_LOCKED = 'WITH action_locked AS (SELECT 1 FROM actions WHERE id = (SELECT action_id FROM jobs WHERE id = $1) FOR NO KEY UPDATE)';
const ACTION_OF_JOB_IS_LOCKED = 'EXISTS (SELECT 1 FROM action_locked)';

/** One move of a job's read model (its workflow's step), with what the job record says about the attempt. */
export interface JobMove {
  status: JobStatus;
  phase: JobPhase;
  /** Count this move as the start of a provider attempt. */
  attempt?: boolean;
  nextAttemptInMs?: number;
  retryable?: boolean;
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Move it only from these statuses (a live job in any other is left as it is, and the move answers false). */
  from?: JobStatus[];
}

/** The UPDATE of one conditional move of a job; `$job` and `$n` placeholders are the caller's (see the two uses below). */
function jobMoveSql(job: string, values: (value: unknown) => string, move: JobMove, also: string): string {
  return `UPDATE jobs SET status = ${values(move.status)}, phase = ${values(move.phase)},
            attempts = attempts + CASE WHEN ${values(move.attempt ?? false)} THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN ${values(move.nextAttemptInMs ?? null)}::int IS NULL THEN NULL ELSE now() + make_interval(secs => ${values(move.nextAttemptInMs ?? null)}::int / 1000.0) END,
            retryable = COALESCE(${values(move.retryable ?? null)}, retryable), error_code = ${values(move.errorCode ?? null)}, error_message = ${values(move.errorMessage ?? null)},
            started_at = COALESCE(started_at, CASE WHEN ${values(move.status)} IN ('claimed', 'running') THEN now() END),
            completed_at = CASE WHEN ${values(move.status)} IN ('succeeded', 'failed', 'dead_letter', 'cancelled') THEN now() ELSE completed_at END,
            updated_at = now()
      WHERE id = ${job}::uuid AND status NOT IN ('succeeded', 'failed', 'dead_letter', 'cancelled') AND (${values(move.from ?? null)}::text[] IS NULL OR status = ANY(${values(move.from ?? null)}))
        AND ${also}
      RETURNING id, type`;
}

/** Counts a job that ended by `move` (its `type`) into the jobs metric, once its transaction commits. */
function countEnded(m: EntityManager, moved: { type: string } | undefined, move: JobMove): void {
  if (moved && (TERMINAL_JOB_STATUSES as readonly string[]).includes(move.status)) afterCommit(m, () => jobsTotal.inc({ type: moved.type, outcome: move.status }));
}

/**
 * Moves a live job (in the caller's transaction, or alone); answers false when the job is already terminal
 * (cancelled by the API, or ended by an earlier run of the same step), or not in one of the `from` statuses when
 * they are given; it is then left as it is.
 */
export async function moveJobRecord(m: EntityManager, jobId: string, move: JobMove): Promise<boolean> {
  const values: unknown[] = [jobId];
  const param = (value: unknown) => `$${values.push(value)}`;
  const moved = await sqlRow<{ type: string }>(m, `${ACTION_OF_JOB_LOCKED}\n     ${jobMoveSql('$1', param, move, ACTION_OF_JOB_IS_LOCKED)}`, values);
  countEnded(m, moved, move);
  return Boolean(moved);
}

/**
 * The part of another step's statement (src/db/statement.ts) that moves its job as moveJobRecord does, only when
 * `when` holds: a condition on the statement's earlier parts that have locked the job's action (the house order:
 * hold, action, card, job), and that orders the move after them. Its row (`id`, `type`) when the job moved; count an
 * end with `countJobMove` once the statement has run.
 */
export function jobMovePart(statement: CompoundStatement, jobId: string, move: JobMove, when: string): string {
  return jobMoveSql(statement.param(jobId), (value) => statement.param(value), move, when);
}

/** Counts what a `jobMovePart` moved (its row, if any) into the jobs metric when the move ended the job. */
export function countJobMove(m: EntityManager, moved: { type: string } | undefined, move: JobMove): void {
  countEnded(m, moved, move);
}

/** The job's provider attempts so far (the running one included). */
export async function jobAttempt(m: EntityManager, jobId: string): Promise<number> {
  return (await sqlRow<{ attempts: number }>(m, 'SELECT attempts FROM jobs WHERE id = $1', [jobId]))?.attempts ?? 1;
}

/** Whether the job has ended (succeeded, failed, dead-lettered or cancelled). */
export async function jobHasEnded(m: EntityManager, jobId: string): Promise<boolean> {
  const row = await sqlRow(m, 'SELECT status FROM jobs WHERE id = $1', [jobId]);
  return !row || (TERMINAL_JOB_STATUSES as readonly string[]).includes(row.status);
}

/** The `job` part of the accept statement (src/db/statement.ts): the v2 job of the statement's `action`, queued. */
export function jobPart(statement: CompoundStatement, job: { id: string; accountId: number; type: JobType; provider: string }): string {
  const p = (value: unknown) => statement.param(value);
  return `INSERT INTO jobs (id, account_id, action_id, type, status, phase, provider)
    SELECT ${p(job.id)}::uuid, ${p(job.accountId)}, action.id, ${p(job.type)}, 'queued', 'queued', ${p(job.provider)} FROM action RETURNING id`;
}

/** After a success's webhooks are started: the last phase, for a job that is already `succeeded`. */
export async function finishJobPostprocessing(m: EntityManager, jobId: string): Promise<void> {
  await m.query(`${ACTION_OF_JOB_LOCKED}
    UPDATE jobs SET phase = 'completed', updated_at = now()
     WHERE id = $1 AND status = 'succeeded' AND phase = 'postprocessing' AND ${ACTION_OF_JOB_IS_LOCKED}`, [jobId]);
}

/** A job left live although its action ended (its workflow stopped in between): it ends as its action did. */
export async function finishJobAsItsAction(m: EntityManager, jobId: string): Promise<boolean> {
  const rows = await sqlRows(m,
    `${ACTION_OF_JOB_LOCKED}
     UPDATE jobs j SET status = CASE a.status WHEN 'completed' THEN 'succeeded' WHEN 'failed' THEN 'failed' ELSE 'cancelled' END,
            phase = CASE a.status WHEN 'completed' THEN 'completed' ELSE 'failed' END,
            error_message = CASE a.status WHEN 'failed' THEN a.error_message ELSE j.error_message END,
            completed_at = now(), updated_at = now()
       FROM actions a
      WHERE j.id = $1 AND a.id = j.action_id AND a.status IN ('completed', 'failed', 'cancelled')
        AND j.status IN ('queued', 'claimed', 'running', 'retry_scheduled') AND ${ACTION_OF_JOB_IS_LOCKED}
      RETURNING j.id`, [jobId]);
  return rows.length > 0;
}

/**
 * Ends the live job of an action that was just released and closed (in the caller's transaction, which holds the
 * action's lock): as the action ended, keeping its last error on a cancel. A job whose action completed is left to
 * its workflow.
 */
export async function closeJobOfAction(
  m: EntityManager, actionId: number, outcome: 'failed' | 'cancelled', errorMessage: string | null,
  job?: { errorCode: string; retryable: boolean },
): Promise<void> {
  const closed = await sqlRow(m,
    `UPDATE jobs SET status = $2, phase = 'failed', completed_at = now(), updated_at = now(),
            retryable = COALESCE($3, retryable), error_code = COALESCE($4, error_code), error_message = COALESCE($5, error_message)
      WHERE action_id = $1 AND status NOT IN ('succeeded', 'failed', 'dead_letter', 'cancelled')
        AND NOT EXISTS (SELECT 1 FROM actions WHERE id = $1 AND status = 'completed')
      RETURNING type`,
    [actionId, outcome, job?.retryable ?? null, job?.errorCode ?? null, job ? errorMessage : null]); // a cancel keeps the last error
  if (closed) afterCommit(m, () => jobsTotal.inc({ type: closed.type, outcome }));
}
