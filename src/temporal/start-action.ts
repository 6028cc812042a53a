import { Client, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { ActionProduct, ActionType } from '../db/entities/action';
import { actionWorkflowId, SEARCH_ATTRIBUTES } from './contract';

/**
 * Starts the workflow of an action. The id is derived from the action, so starting twice (a retried request, a
 * recovery sweep) finds the running workflow instead of making a second one.
 */
export async function startActionWorkflow(
  client: Client, taskQueue: string, action: { id: number; accountId: number; type: ActionType; product: ActionProduct },
): Promise<void> {
  try {
    await client.workflow.start('actionWorkflow', {
      taskQueue,
      workflowId: actionWorkflowId(action.id),
      args: [{ actionId: action.id }],
      staticSummary: `${action.product} ${action.type} · action ${action.id} · account ${action.accountId}`,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE, // one action, one workflow, ever
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.accountId, value: action.accountId },
        { key: SEARCH_ATTRIBUTES.actionId, value: action.id },
        { key: SEARCH_ATTRIBUTES.actionType, value: action.type },
        { key: SEARCH_ATTRIBUTES.actionStatus, value: 'pending' },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
