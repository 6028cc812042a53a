/**
 * Announcing an outcome: one child workflow per webhook delivery, abandoned when the parent closes so that a slow
 * receiver never holds the action or job back. Shared by the v1 action and v2 job workflows.
 */
import {
  CancellationScope, log, ParentClosePolicy, proxyActivities, proxyLocalActivities, startChild, WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DeliveryPlan } from '../src/webhooks/store';
import { deliveryWorkflowId, SEARCH_ATTRIBUTES, TIMEOUTS } from '../src/temporal/contract';
import { webhookDeliveryWorkflow } from './webhook-delivery';

const remote = proxyActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });
const local = proxyLocalActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });

/**
 * Plans the deliveries of an outcome and starts them. `planning` says how the plan is made: as an activity (as
 * every workflow did before the `fused-steps` patch, and announcement workflows still do) or as a local activity.
 */
export async function announceOutcome(actionId: number, outcome: 'completed' | 'failed', planning: 'activity' | 'local' = 'activity'): Promise<void> {
  await CancellationScope.nonCancellable(async () => {
    await startEach(actionId, await (planning === 'local' ? local : remote).planDeliveries(actionId, outcome));
  });
}

/** Starts the deliveries of a plan made by the step that ended the action (since the `outcome-plans` patch). */
export async function startDeliveries(actionId: number, plan: DeliveryPlan): Promise<void> {
  if (plan.deliveries.length > 0) await CancellationScope.nonCancellable(() => startEach(actionId, plan));
}

/** Plans and starts the deliveries of a batch's end (`batch.completed` or `batch.failed`, by its status). */
export async function announceBatch(batchId: string, status: string): Promise<void> {
  await CancellationScope.nonCancellable(async () => {
    await startEach(null, await local.planBatchDeliveries(batchId, status));
  });
}

/**
 * One child workflow per planned delivery; one that cannot be started is left to the reconciler. `actionId`: the
 * action whose outcome they announce (null for a batch's).
 */
async function startEach(actionId: number | null, plan: DeliveryPlan): Promise<void> {
  for (const delivery of plan.deliveries) {
    try {
      await startChild(webhookDeliveryWorkflow, {
        workflowId: deliveryWorkflowId(delivery.deliveryId),
        args: [{ deliveryId: delivery.deliveryId, maxAttempts: delivery.maxAttempts, retryInitialMs: plan.retryInitialMs }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        typedSearchAttributes: [
          ...(actionId !== null ? [{ key: SEARCH_ATTRIBUTES.actionId, value: actionId }] : []),
          { key: SEARCH_ATTRIBUTES.webhookEvent, value: delivery.event },
        ],
        staticSummary: `${delivery.event} → ${delivery.registered ? 'registered webhook' : 'ad-hoc webhook_url'}`,
      });
    } catch (err) {
      log.warn('webhook delivery not started', { deliveryId: delivery.deliveryId, error: String(err) });
    }
  }
}
