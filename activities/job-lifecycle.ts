/**
 * The v2 job read model, moved by the job workflow. Every move is conditional on the job not being terminal, so
 * a job cancelled by the API (or finished by an earlier attempt of this activity) is never moved again; the
 * answer says whether the job is still live. The moves that accompany another step (the start, the render, the
 * charge, the failure) are made by that step's own activity, in its transaction (see `moveJobRecord`).
 */
import { releaseAndClose } from '../src/actions/lifecycle';
import { finishJobPostprocessing, JobMove, moveJobRecord } from '../src/jobs/lifecycle';
import type { ActivityDeps } from './deps';

export function createJobLifecycleActivities({ db }: ActivityDeps) {
  return {
    async moveJob(jobId: string, move: JobMove): Promise<'moved' | 'cancelled'> {
      return (await moveJobRecord(db.manager, jobId, move)) ? 'moved' : 'cancelled';
    },

    /** After a success's webhooks are started: the last phase, for a job that is already `succeeded`. */
    async finishJobPostprocessing(jobId: string): Promise<void> {
      await finishJobPostprocessing(db.manager, jobId);
    },

    /** Ends a job cancelled while it ran: the job, its action and its hold, in one transaction (locks in order). */
    async cancelJob(jobId: string, actionId: number): Promise<void> {
      await db.transaction((m) => releaseAndClose(m, actionId, 'cancelled', null));
    },
  };
}
