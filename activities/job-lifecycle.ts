/**
 * The v2 job read model, moved by the job workflow. Every move is conditional on the job not being terminal, so
 * a job cancelled by the API (or finished by an earlier attempt of this activity) is never moved again; the
 * answer says whether the job is still live.
 */
import { sqlRow } from '../src/db/sql';
import { releaseAndClose } from '../src/domain/action-states';
import type { JobPhase, JobStatus } from '../src/domain/jobs';
import type { ActivityDeps } from './deps';

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

export function createJobLifecycleActivities({ db }: ActivityDeps) {
  return {
    async moveJob(jobId: string, move: JobMove): Promise<'moved' | 'cancelled'> {
      const moved = await sqlRow(db.manager,
        `UPDATE jobs SET status = $2, phase = $3,
                attempts = attempts + CASE WHEN $4 THEN 1 ELSE 0 END,
                next_attempt_at = CASE WHEN $5::int IS NULL THEN NULL ELSE now() + make_interval(secs => $5::int / 1000.0) END,
                retryable = COALESCE($6, retryable), error_code = $7, error_message = $8,
                started_at = COALESCE(started_at, CASE WHEN $2 IN ('claimed', 'running') THEN now() END),
                completed_at = CASE WHEN $2 IN ('succeeded', 'failed', 'dead_letter', 'cancelled') THEN now() ELSE completed_at END,
                updated_at = now()
          WHERE id = $1 AND status NOT IN ('succeeded', 'failed', 'dead_letter', 'cancelled')
          RETURNING id`,
        [jobId, move.status, move.phase, move.attempt ?? false, move.nextAttemptInMs ?? null, move.retryable ?? null,
          move.errorCode ?? null, move.errorMessage ?? null]);
      return moved ? 'moved' : 'cancelled';
    },

    /** After a success's webhooks are started: the last phase, for a job that is already `succeeded`. */
    async finishJobPostprocessing(jobId: string): Promise<void> {
      await db.query(`UPDATE jobs SET phase = 'completed', updated_at = now() WHERE id = $1 AND status = 'succeeded' AND phase = 'postprocessing'`, [jobId]);
    },

    /** Ends a job cancelled while it ran: the job, its action and its hold, in one transaction (locks in order). */
    async cancelJob(jobId: string, actionId: number): Promise<void> {
      await db.transaction((m) => releaseAndClose(m, actionId, 'cancelled', null));
    },
  };
}
