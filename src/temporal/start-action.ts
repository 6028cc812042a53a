import { Client, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { ActionProduct, ActionType } from '../db/entities/action';
import { actionWorkflowId, jobWorkflowId, ProviderRoute, SEARCH_ATTRIBUTES } from './contract';
import type { JobType } from '../domain/jobs';

/** The provider's queue in the Web UI summary. */
const routeNote = (route?: ProviderRoute): string => (route ? ` · ${route.taskQueue}` : '');

type StartOptions = Parameters<Client['workflow']['start']>[1];

/**
 * Starts a workflow whose id is derived from what it owns (an action, a job, a session, an announcement): starting
 * it again finds the one already there, never a second (`REJECT_DUPLICATE`, "already started" ignored). A closed
 * one with that id is left to the reconciler.
 */
export async function startOnce(client: Client, workflowType: string, options: StartOptions): Promise<void> {
  try {
    await client.workflow.start(workflowType, { workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE, ...options });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * Starts the workflow of a v1 action. The id is derived from the action, so starting twice (a retried request, a
 * reconciler) finds the workflow instead of making a second one; a closed one is left to the reconciler.
 */
export async function startActionWorkflow(
  client: Client, taskQueue: string, action: { id: number; accountId: number; type: ActionType; product: ActionProduct; provider?: ProviderRoute },
): Promise<void> {
  await startOnce(client, 'actionWorkflow', {
    taskQueue,
    workflowId: actionWorkflowId(action.id),
    args: [{ actionId: action.id, ...(action.provider ? { provider: action.provider } : {}) }],
    staticSummary: `${action.product} ${action.type} · action ${action.id} · account ${action.accountId}${routeNote(action.provider)}`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: action.accountId },
      { key: SEARCH_ATTRIBUTES.actionId, value: action.id },
      { key: SEARCH_ATTRIBUTES.actionType, value: action.type },
      { key: SEARCH_ATTRIBUTES.actionStatus, value: 'pending' },
    ],
  });
}

/** Starts the workflow of a v2 job (`job-<uuid>`), which runs its action. */
export async function startJobWorkflow(
  client: Client, config: { taskQueue: string; jobMaxAttempts: number; jobRetryBackoffMs: number },
  job: { jobId: string; type: JobType; actionId: number; accountId: number; provider?: ProviderRoute },
): Promise<void> {
  await startOnce(client, 'jobWorkflow', {
    taskQueue: config.taskQueue,
    workflowId: jobWorkflowId(job.jobId),
    args: [{
      jobId: job.jobId, actionId: job.actionId, maxAttempts: config.jobMaxAttempts, backoffMs: config.jobRetryBackoffMs,
      ...(job.provider ? { provider: job.provider } : {}),
    }],
    staticSummary: `${job.type} · job ${job.jobId} · action ${job.actionId} · account ${job.accountId}${routeNote(job.provider)}`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: job.accountId },
      { key: SEARCH_ATTRIBUTES.actionId, value: job.actionId },
      { key: SEARCH_ATTRIBUTES.jobId, value: job.jobId },
      { key: SEARCH_ATTRIBUTES.jobStatus, value: 'queued' },
      { key: SEARCH_ATTRIBUTES.jobPhase, value: 'queued' },
    ],
  });
}
