/** v2 job vocabulary: statuses, phases, and the polling hints derived from them. */
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
