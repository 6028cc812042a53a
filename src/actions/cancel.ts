/**
 * Cancels, v1 and v2, honest in every state: what is not running (or whose workflow or worker has stopped) is
 * cancelled here and now with its hold released; what a live worker is running is asked to stop at its next safe
 * point. Every move takes the settlement locks in the one order (hold, action, job), so a cancel racing the
 * workflow ends one way only: cancelled and released, or finished and charged.
 */
import { WorkflowExecutionDescription, WorkflowNotFoundError } from '@temporalio/client';
import type { ActionStatus } from '../db/entities/action';
import { sqlRow } from '../db/sql';
import { closeAction, lockForSettlement, OPEN_ACTION_STATUSES, releaseAndClose } from './lifecycle';
import { settleHold } from '../billing/sparks';
import { JobStatus, TERMINAL_JOB_STATUSES } from '../jobs/lifecycle';
import { actionWorkflowId, jobWorkflowId, PROVIDER_HEARTBEAT_TIMEOUT_SECONDS } from '../temporal/contract';
import { workflowState } from '../temporal/workflow-state';
import { log } from '../log';
import type { Services as AllServices } from '../services';

type Services = Pick<AllServices, 'db' | 'temporal'>;

export interface CancelAnswer<S> { status: S; cancelled: boolean; message: string }
export interface CancellableJob { id: string; action_id: number; status: JobStatus; updated_at: Date }

const STOPPABLE_AT_ONCE: readonly JobStatus[] = ['queued', 'claimed', 'retry_scheduled'];

/**
 * Whether a running job's worker has stopped: its render started but stopped heartbeating; or, for a render in the
 * worker's own process (a local activity), the workflow task holding it was started longer ago than the heartbeat
 * timeout (a live worker renews it every 8 s, as the core does for a task with local activities); or nothing has
 * moved the job for longer than the heartbeat timeout (a step timed out and no worker took the workflow up again).
 */
function workerStopped(description: WorkflowExecutionDescription, job: CancellableJob, now = Date.now()): boolean {
  const stale = (seconds: number) => now / 1000 - seconds > PROVIDER_HEARTBEAT_TIMEOUT_SECONDS;
  const render = (description.raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'generateAsset');
  if (render && Number(render.state) === 2 /* STARTED */) {
    return stale(Number((render.lastHeartbeatTime ?? render.lastStartedTime)?.seconds ?? 0));
  }
  const task = description.raw.pendingWorkflowTask;
  if (!render && task && Number(task.state) === 2 /* STARTED */ && !stale(Number(task.startedTime?.seconds ?? 0))) return false;
  return stale(new Date(job.updated_at).getTime() / 1000);
}

async function requestWorkflowCancel({ temporal }: Services, workflowId: string): Promise<void> {
  try {
    await temporal.workflow.getHandle(workflowId).cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}

export async function cancelJob(services: Services, job: CancellableJob): Promise<CancelAnswer<JobStatus>> {
  if (TERMINAL_JOB_STATUSES.includes(job.status)) {
    return { status: job.status, cancelled: job.status === 'cancelled', message: job.status === 'cancelled' ? 'The job was already cancelled' : `The job already ended as ${job.status}` };
  }
  const workflow = await workflowState(services.temporal, jobWorkflowId(job.id));
  const stopped = workflow.kind !== 'running' || (job.status === 'running' && workerStopped(workflow.description, job));
  const outcome = await services.db.transaction(async (m) => {
    const action = await lockForSettlement(m, job.action_id);
    const live = await sqlRow(m, 'SELECT status FROM jobs WHERE id = $1 FOR UPDATE', [job.id]);
    if (TERMINAL_JOB_STATUSES.includes(live!.status)) return { ended: live!.status as JobStatus };
    if (!(OPEN_ACTION_STATUSES as readonly string[]).includes(action!.status)) return 'finishing' as const; // its workflow ends it
    if (!stopped && !STOPPABLE_AT_ONCE.includes(live!.status)) return 'requested' as const;
    await releaseAndClose(m, job.action_id, 'cancelled', null);
    return 'cancelled' as const;
  });
  if (workflow.kind === 'running' && outcome !== 'finishing') await requestWorkflowCancel(services, jobWorkflowId(job.id));
  if (outcome === 'cancelled') return { status: 'cancelled', cancelled: true, message: 'Cancelled; held sparks were released' };
  if (outcome === 'requested') return { status: 'running', cancelled: false, message: 'Cancel requested' };
  if (outcome === 'finishing') return { status: 'running', cancelled: false, message: 'The job is already finishing and will not be cancelled' };
  return { status: outcome.ended, cancelled: outcome.ended === 'cancelled', message: `The job already ended as ${outcome.ended}` };
}

export async function cancelAction(
  services: Services, action: { id: number; status: ActionStatus; price: number },
): Promise<CancelAnswer<ActionStatus>> {
  const { db, temporal } = services;
  const statusNow = async () => (await sqlRow(db.manager, 'SELECT status FROM actions WHERE id = $1', [action.id]))!.status as ActionStatus;

  // The action of a v2 job belongs to its job workflow: cancel the job.
  const job = await sqlRow<CancellableJob>(db.manager, 'SELECT id, action_id, status, updated_at FROM jobs WHERE action_id = $1', [action.id]);
  if (job) {
    const answer = await cancelJob(services, job);
    return { ...answer, status: await statusNow() };
  }

  let status = action.status;
  if (status === 'pending') {
    // Not started: cancel and release here and now; the workflow sees it and ends without rendering.
    const cancelled = await db.transaction(async (m) => {
      await lockForSettlement(m, action.id);
      if (!(await closeAction(m, action.id, 'cancelled', null, ['pending']))) return false;
      await settleHold(m, action.id, 'released');
      return true;
    });
    if (cancelled) {
      // Its workflow may be waiting for its provider's queue: told now, it ends without taking a provider slot.
      // Best effort: the cancel is done; a workflow not told finds the action cancelled when its render starts.
      await requestWorkflowCancel(services, actionWorkflowId(action.id))
        .catch((err) => log.warn('a cancelled action\'s workflow could not be told', { actionId: action.id, error: String(err) }));
      return { status: 'cancelled', cancelled: true, message: `Cancelled before processing started; ${action.price} sparks released` };
    }
    status = await statusNow(); // it just started
  }
  if (status === 'processing') {
    const workflow = await workflowState(temporal, actionWorkflowId(action.id));
    if (workflow.kind === 'running') {
      await requestWorkflowCancel(services, actionWorkflowId(action.id));
      return { status: 'processing', cancelled: false, message: 'Cancel requested; the action is already running and may still complete' };
    }
    // Its workflow has stopped (terminated, or lost): nothing will finish it, so it is cancelled here.
    if (await db.transaction((m) => releaseAndClose(m, action.id, 'cancelled', null))) {
      return { status: 'cancelled', cancelled: true, message: `Cancelled; its processing had stopped; ${action.price} sparks released` };
    }
    status = await statusNow();
  }
  if (status === 'cancelled') return { status, cancelled: true, message: 'The action was already cancelled' };
  return { status, cancelled: false, message: `The action is already ${status}` };
}
