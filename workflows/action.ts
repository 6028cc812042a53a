/**
 * The story of one v1 action: start, render with the provider, then either charge and complete or release and
 * fail. Activities do the work; this file only decides.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_FAILURE_TYPES, SEARCH_ATTRIBUTES, TIMEOUTS } from '../src/temporal/contract';

const bookkeeping = proxyActivities<Activities>({
  ...TIMEOUTS.bookkeeping,
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' }, // until the database answers again
});

const provider = proxyActivities<Activities>({
  ...TIMEOUTS.provider,
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 4,
    nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES,
  },
});

export interface ActionWorkflowInput {
  actionId: number;
}

export type ActionOutcome =
  | { status: 'completed'; assetPath: string }
  | { status: 'failed'; error: string }
  | { status: 'cancelled' };

function setStatus(status: string): void {
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.actionStatus, value: status }]);
}

/** The message an integrator sees: the provider's own words, not Temporal's wrapping. */
function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) return cause.message;
  return 'Generation failed';
}

export async function actionWorkflow({ actionId }: ActionWorkflowInput): Promise<ActionOutcome> {
  if ((await bookkeeping.startProcessing(actionId)) === 'cancelled') {
    setStatus('cancelled');
    return { status: 'cancelled' };
  }
  setStatus('processing');

  let assetPath: string;
  try {
    assetPath = await provider.generateAsset(actionId);
  } catch (err) {
    const error = failureMessage(err);
    await bookkeeping.failAction(actionId, error);
    setStatus('failed');
    return { status: 'failed', error };
  }

  if ((await bookkeeping.completeAction(actionId, assetPath)) === 'cancelled') {
    setStatus('cancelled');
    return { status: 'cancelled' };
  }
  setStatus('completed');
  return { status: 'completed', assetPath };
}
