import type { Client } from '@temporalio/client';
import { funnelWorkflowId, SEARCH_ATTRIBUTES } from './contract';
import { startOnce } from './start-action';

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
