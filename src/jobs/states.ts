/** v2 job vocabulary: statuses, phases, the polling hints derived from them, and the one conditional move of a job. */
import type { EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { afterCommit } from '../db/after-commit';
import { jobsTotal } from '../metrics/registry';

export const JOB_STATUSES = ['queued', 'claimed', 'running', 'retry_scheduled', 'succeeded', 'failed', 'dead_letter', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'dead_letter', 'cancelled'];

export const JOB_PHASES = ['queued', 'routing', 'provider_reserved', 'provider_running', 'finalizing', 'postprocessing', 'completed', 'failed'] as const;
export type JobPhase = (typeof JOB_PHASES)[number];

export type JobType = 'generation.execute' | 'edit.execute';

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
}

/**
 * Moves a live job (in the caller's transaction, or alone); answers false when the job is already terminal
 * (cancelled by the API, or ended by an earlier run of the same step), which is then left as it is.
 */
export async function moveJobRecord(m: EntityManager, jobId: string, move: JobMove): Promise<boolean> {
  // The action's row is locked first (the house order: action before job), as the event trigger of `jobs` locks it
  // too (migration ActionEvents): taken after the job's row, it could deadlock with a cancel that holds the action.
  const moved = await sqlRow(m,
    `WITH action_locked AS (SELECT 1 FROM actions WHERE id = (SELECT action_id FROM jobs WHERE id = $1) FOR NO KEY UPDATE)
     UPDATE jobs SET status = $2, phase = $3,
            attempts = attempts + CASE WHEN $4 THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN $5::int IS NULL THEN NULL ELSE now() + make_interval(secs => $5::int / 1000.0) END,
            retryable = COALESCE($6, retryable), error_code = $7, error_message = $8,
            started_at = COALESCE(started_at, CASE WHEN $2 IN ('claimed', 'running') THEN now() END),
            completed_at = CASE WHEN $2 IN ('succeeded', 'failed', 'dead_letter', 'cancelled') THEN now() ELSE completed_at END,
            updated_at = now()
      WHERE id = $1 AND status NOT IN ('succeeded', 'failed', 'dead_letter', 'cancelled') AND EXISTS (SELECT 1 FROM action_locked)
      RETURNING id, type`,
    [jobId, move.status, move.phase, move.attempt ?? false, move.nextAttemptInMs ?? null, move.retryable ?? null,
      move.errorCode ?? null, move.errorMessage ?? null]);
  if (moved && (TERMINAL_JOB_STATUSES as readonly string[]).includes(move.status)) {
    afterCommit(m, () => jobsTotal.inc({ type: moved.type, outcome: move.status }));
  }
  return Boolean(moved);
}
