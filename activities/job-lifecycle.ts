/**
 * The v2 job read model, moved by the job workflow. Every move is conditional on the job not being terminal, so
 * a job cancelled by the API (or finished by an earlier attempt of this activity) is never moved again; the
 * answer says whether the job is still live. The moves that accompany another step (the start, the render, the
 * charge, the failure) are made by that step's own activity, in its transaction (see `moveJobRecord`).
 */
import { releaseAndClose } from '../src/actions/states';
import { JobMove, moveJobRecord } from '../src/jobs/states';
import type { ActivityDeps } from './deps';


export function createJobLifecycleActivities({ db }: ActivityDeps) {
  return {
    async moveJob(jobId: string, move: JobMove): Promise<'moved' | 'cancelled'> {
      return (await moveJobRecord(db.manager, jobId, move)) ? 'moved' : 'cancelled';
    },

    /** After a success's webhooks are started: the last phase, for a job that is already `succeeded`. */
    async finishJobPostprocessing(jobId: string): Promise<void> {
      // The action's row first, as in moveJobRecord (the event trigger of `jobs` locks it).
      await db.query(`WITH action_locked AS (SELECT 1 FROM actions WHERE id = (SELECT action_id FROM jobs WHERE id = $1) FOR NO KEY UPDATE)
        UPDATE jobs SET phase = 'completed', updated_at = now()
         WHERE id = $1 AND status = 'succeeded' AND phase = 'postprocessing' AND EXISTS (SELECT 1 FROM action_locked)`, [jobId]);
    },

    /** Ends a job cancelled while it ran: the job, its action and its hold, in one transaction (locks in order). */
    async cancelJob(jobId: string, actionId: number): Promise<void> {
      await db.transaction((m) => releaseAndClose(m, actionId, 'cancelled', null));
    },
  };
}
