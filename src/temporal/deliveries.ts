import { Client, WorkflowIdReusePolicy } from '@temporalio/client';
import { deliveryWorkflowId, SEARCH_ATTRIBUTES } from './contract';

export interface DeliveryStart {
  deliveryId: string;
  actionId: number;
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
  await client.workflow.start('webhookDeliveryWorkflow', {
    taskQueue,
    workflowId: deliveryWorkflowId(delivery.deliveryId),
    args: [{ deliveryId: delivery.deliveryId, maxAttempts: delivery.maxAttempts, retryInitialMs: delivery.retryInitialMs }],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.actionId, value: delivery.actionId },
      { key: SEARCH_ATTRIBUTES.webhookEvent, value: delivery.event },
    ],
    staticSummary: delivery.summary,
  });
}
