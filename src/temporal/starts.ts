/**
 * Every start of a workflow from outside a workflow (the API, the reconciler), typed by the workflow contract: the
 * type name and the arguments are checked against `WorkflowContract`, which the workflows implement. Ids are
 * derived from what a workflow owns, so a repeated start finds the one already there instead of making a second.
 */
import { Client, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type WorkflowStartOptions } from '@temporalio/client';
import type { ActionProduct, ActionType } from '../db/entities/action';
import type { JobType } from '../jobs/lifecycle';
import {
  actionWorkflowId, announcementWorkflowId, batchPriority, batchTaskQueue, batchWorkflowId, deliveryWorkflowId, funnelWorkflowId, jobWorkflowId, type ProviderRoute, SEARCH_ATTRIBUTES,
  type WorkflowContract, type WorkflowType,
} from './contract';

type StartOptions<T extends WorkflowType> = WorkflowStartOptions<WorkflowContract[T]>;

/** The provider's queue in the Web UI summary. */
const routeNote = (route?: ProviderRoute): string => (route ? ` · ${route.taskQueue}` : '');

/**
 * Starts a workflow whose id is derived from what it owns (an action, a job, a session, an announcement): starting
 * it again finds the one already there, never a second (`REJECT_DUPLICATE`, "already started" ignored). A closed
 * one with that id is left to the reconciler.
 */
export async function startOnce<T extends WorkflowType>(client: Client, workflowType: T, options: StartOptions<T>): Promise<void> {
  try {
    await client.workflow.start<WorkflowContract[T]>(workflowType, { workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE, ...options });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * Starts the workflow of a v1 action. The id is derived from the action (`action-<id>`), so starting twice (a
 * retried request, a reconciler) finds the workflow instead of making a second one; a closed one is left to the
 * reconciler.
 */
export async function startActionWorkflow(
  client: Client, taskQueue: string, action: { id: number; accountId: number; type: ActionType; product: ActionProduct; provider?: ProviderRoute },
): Promise<void> {
  await startOnce(client, 'actionWorkflow', {
    taskQueue,
    workflowId: actionWorkflowId(action.id),
    args: [{ actionId: action.id, ...(action.provider ? { provider: action.provider } : {}) }],
    staticSummary: `${action.product} ${action.type} · action ${action.id} · account ${action.accountId}${routeNote(action.provider)}`,
    // What an operator filters by; the id is in the workflow id, the status comes with the workflow's first step
    // (each search attribute costs the Temporal server an index write on every start).
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: action.accountId },
      { key: SEARCH_ATTRIBUTES.actionType, value: action.type },
    ],
  });
}

/**
 * Starts the workflow of a v2 job (`job-<uuid>`), which runs its action; a batch's item (`batchId`) on the batch
 * queue, at the batch's priority. `eager`: the client is a worker's of the job's queue (a batch's step, which runs
 * in a worker of the batch queue), asked to take the job's first task with the start (src/temporal/client.ts).
 */
export async function startJobWorkflow(
  client: Client, config: { taskQueue: string; jobMaxAttempts: number; jobRetryBackoffMs: number },
  job: { jobId: string; type: JobType; actionId: number; accountId: number; provider?: ProviderRoute; batchId?: string }, options: { eager?: boolean } = {},
): Promise<void> {
  await startOnce(client, 'jobWorkflow', {
    ...(job.batchId ? { taskQueue: batchTaskQueue(config.taskQueue), priority: batchPriority(job.accountId) } : { taskQueue: config.taskQueue }),
    ...(options.eager ? { requestEagerStart: true } : {}),
    workflowId: jobWorkflowId(job.jobId),
    args: [{
      jobId: job.jobId, actionId: job.actionId, maxAttempts: config.jobMaxAttempts, backoffMs: config.jobRetryBackoffMs,
      ...(job.provider ? { provider: job.provider } : {}),
    }],
    staticSummary: `${job.type} · job ${job.jobId} · action ${job.actionId} · account ${job.accountId}${job.batchId ? ` · batch ${job.batchId}` : ''}${routeNote(job.provider)}`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: job.accountId },
      { key: SEARCH_ATTRIBUTES.actionId, value: job.actionId },
      { key: SEARCH_ATTRIBUTES.jobId, value: job.jobId },
      { key: SEARCH_ATTRIBUTES.jobStatus, value: 'queued' },
      { key: SEARCH_ATTRIBUTES.jobPhase, value: 'queued' },
    ],
  });
}

/**
 * Starts a batch's workflow (`batch-<uuid>`), once, on the batch queue of `taskQueue` at the batch's priority: below
 * interactive work, fair among accounts; its items' jobs are started alike.
 */
export async function startBatchWorkflow(client: Client, taskQueue: string, batch: { batchId: string; accountId: number; items: number }): Promise<void> {
  await startOnce(client, 'batchWorkflow', {
    taskQueue: batchTaskQueue(taskQueue),
    workflowId: batchWorkflowId(batch.batchId),
    args: [{ batchId: batch.batchId }],
    priority: batchPriority(batch.accountId),
    staticSummary: `batch ${batch.batchId} · ${batch.items} items · account ${batch.accountId}`,
    typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.accountId, value: batch.accountId }],
  });
}

/** Starts the workflow of a funnel session (`funnel-<id>`), once: its id is derived from the session. */
export async function startFunnelWorkflow(
  client: Client, taskQueue: string, funnel: { funnelId: number; accountId: number; idleTimeoutSeconds: number },
): Promise<void> {
  await startOnce(client, 'funnelWorkflow', {
    taskQueue,
    workflowId: funnelWorkflowId(funnel.funnelId),
    args: [{ funnelId: funnel.funnelId, idleTimeoutSeconds: funnel.idleTimeoutSeconds }],
    staticSummary: `funnel ${funnel.funnelId} · account ${funnel.accountId} · ends after ${funnel.idleTimeoutSeconds} s idle`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: funnel.accountId },
      { key: SEARCH_ATTRIBUTES.funnelId, value: funnel.funnelId },
    ],
  });
}

/** Starts the announcement workflow of an action's outcome: one per action and outcome, however often asked. */
export async function startAnnouncement(client: Client, taskQueue: string, actionId: number, outcome: 'completed' | 'failed', why: string): Promise<void> {
  await startOnce(client, 'announcementWorkflow', {
    taskQueue,
    workflowId: announcementWorkflowId(actionId, outcome),
    args: [{ actionId, outcome }],
    staticSummary: `${outcome === 'completed' ? 'completion' : 'failure'} event of action ${actionId} (${why})`,
    typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.actionId, value: actionId }],
  });
}

export interface DeliveryStart {
  deliveryId: string;
  /** The action whose outcome it announces (null for a batch's event). */
  actionId: number | null;
  event: string;
  maxAttempts: number;
  retryInitialMs: number;
  /** The Web UI's summary of the run. */
  summary: string;
}

/**
 * Starts a webhook delivery's workflow from outside a workflow (a redelivery through the API, the reconciler). Its id
 * is the delivery's: a closed run may be followed by a new one (`ALLOW_DUPLICATE`), a running one is never doubled
 * (`WorkflowExecutionAlreadyStartedError`).
 */
export async function startDeliveryWorkflow(client: Client, taskQueue: string, delivery: DeliveryStart): Promise<void> {
  await client.workflow.start<WorkflowContract['webhookDeliveryWorkflow']>('webhookDeliveryWorkflow', {
    taskQueue,
    workflowId: deliveryWorkflowId(delivery.deliveryId),
    args: [{ deliveryId: delivery.deliveryId, maxAttempts: delivery.maxAttempts, retryInitialMs: delivery.retryInitialMs }],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    typedSearchAttributes: [
      ...(delivery.actionId !== null ? [{ key: SEARCH_ATTRIBUTES.actionId, value: delivery.actionId }] : []),
      { key: SEARCH_ATTRIBUTES.webhookEvent, value: delivery.event },
    ],
    staticSummary: delivery.summary,
  });
}
