/**
 * One webhook delivery, started by its action's workflow and outliving it. The activity makes one POST per
 * attempt; the retry policy is the contract's: 5 attempts for registered webhooks, 3 for ad-hoc ones, backing off
 * exponentially, no retry after a permanent refusal (4xx other than 408, 409, 429).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { type DeliveryInput, type DeliveryOutcome, FAILURE_TYPES, TIMEOUTS } from '../src/temporal/contract';



const bookkeeping = proxyActivities<Activities>({ startToCloseTimeout: '30 seconds', retry: { maximumInterval: '30 seconds' } });

export async function webhookDeliveryWorkflow({ deliveryId, maxAttempts, retryInitialMs }: DeliveryInput): Promise<DeliveryOutcome> {
  const { deliverWebhook } = proxyActivities<Activities>({
    ...TIMEOUTS.delivery,
    retry: {
      maximumAttempts: maxAttempts,
      initialInterval: retryInitialMs,
      backoffCoefficient: 2,
      nonRetryableErrorTypes: [FAILURE_TYPES.webhookRefused],
    },
  });
  try {
    return { status: await deliverWebhook(deliveryId) };
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    await bookkeeping.failDelivery(deliveryId);
    return { status: 'failed', error: cause instanceof ApplicationFailure ? cause.message : 'Delivery failed' };
  }
}
