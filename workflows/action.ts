/**
 * The story of one v1 action, as an operator reads it in the Web UI: start (`startProcessing`), the provider call
 * on the provider's own task queue (`generateAsset`, or `advanceVideoRender` steps with timers between), then the
 * finalisation: charge and complete, or release and fail, each with its deliveries planned in the same step
 * (`completeAndPlanDeliveries`, `failAndPlanDeliveries`), or, when cancelled during the render, release and cancel
 * (`cancelAction`); last, one child workflow per planned webhook delivery. Activities do the work; this file only
 * decides. Bookkeeping runs outside cancellation, so a cancel request can stop the render but never half a
 * settlement.
 *
 * Since the `fused-steps` patch the bookkeeping steps (short database transactions) run as local activities: in
 * the worker that runs the workflow, within its workflow task, each recorded as a marker in the history, so that
 * the provider call is the only activity task that goes through the server. Since `inline-render` an image of the
 * local renderer (in-process work, no remote quota) is a local activity too (`renderAsset`): such a photo is one
 * workflow task from start to deliveries. Between the `settled-render` and
 * `visible-steps` patches an image action's start, render and completion were one activity (`settledRender`),
 * which hid whether a failure was the provider's or the charge's; since `visible-steps` they are steps again. Before
 * the `outcome-plans` patch the deliveries were planned by a step of their own (`completeAction` or `failAction`,
 * then `planDeliveries`): a local activity and a workflow activation more per action.
 * Workflows started before a patch replay as they were recorded.
 */
import {
  ActivityFailure, ApplicationFailure, CancellationScope, isCancellation, log, patched, proxyActivities, proxyLocalActivities, RetryPolicy,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  type ActionOutcome, type ActionWorkflowInput, NON_RETRYABLE_FAILURE_TYPES, type ProviderRoute, SEARCH_ATTRIBUTES, SHOWN_FAILURE_TYPES, TIMEOUTS,
} from '../src/temporal/contract';
import { announceOutcome, startDeliveries } from './outcome-deliveries';
import { renderAsset, stopProviderTask } from './render';

const bookkeeping = proxyActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });
/** The same steps as local activities (since `fused-steps`). */
const localBookkeeping = proxyLocalActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });

const providerRetry: RetryPolicy = {
  initialInterval: '2 seconds',
  backoffCoefficient: 2,
  maximumInterval: '1 minute',
  maximumAttempts: 4,
  nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES,
};

/** The main task queue's provider call, for workflows started before provider routing. */
const provider = proxyActivities<Activities>({ ...TIMEOUTS.provider, retry: providerRetry });



function setStatus(status: string): void {
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.actionStatus, value: status }]);
}

/** The message an integrator sees: the provider's own words, not Temporal's wrapping. */
function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && SHOWN_FAILURE_TYPES.includes(cause.type ?? '')) return cause.message;
  log.warn('generation failed for an internal reason', { error: String(cause) });
  return 'Generation failed';
}

const settle = <T>(step: () => Promise<T>): Promise<T> => CancellationScope.nonCancellable(step);

export async function actionWorkflow({ actionId, provider: route }: ActionWorkflowInput): Promise<ActionOutcome> {
  const fused = patched('fused-steps');
  // Image actions started between the `settled-render` and `visible-steps` patches ran as one activity.
  if (fused && route && route.pollSeconds === undefined && !patched('visible-steps') && patched('settled-render')) return settledRender(actionId, route);
  const steps = fused ? localBookkeeping : bookkeeping;
  // Since `outcome-plans` the step that ends the action also plans its deliveries (one local activity, not two).
  const plansWithOutcome = fused && patched('outcome-plans');
  /** Histories recorded before webhooks existed replay without announcing (the `webhook-deliveries` patch). */
  const announce = async (outcome: 'completed' | 'failed'): Promise<void> => {
    if (fused) await announceOutcome(actionId, outcome, 'local');
    else if (patched('webhook-deliveries')) await announceOutcome(actionId, outcome);
  };

  if ((await settle(() => steps.startProcessing(actionId))) === 'cancelled') {
    setStatus('cancelled');
    return { status: 'cancelled' };
  }
  setStatus('processing');

  let assetPath: string;
  try {
    assetPath = await renderAsset(actionId, route, providerRetry, provider.generateAsset);
  } catch (err) {
    if (isCancellation(err)) {
      const outcome = await settle(() => steps.cancelAction(actionId));
      setStatus(outcome);
      return { status: 'cancelled' };
    }
    const error = failureMessage(err);
    await stopProviderTask(actionId, route);
    if (plansWithOutcome) {
      const plan = await settle(() => steps.failAndPlanDeliveries(actionId, error));
      setStatus('failed');
      await startDeliveries(actionId, plan);
    } else {
      await settle(() => steps.failAction(actionId, error));
      setStatus('failed');
      await announce('failed');
    }
    return { status: 'failed', error };
  }

  if (plansWithOutcome) {
    const { outcome, plan } = await settle(() => steps.completeAndPlanDeliveries(actionId, assetPath));
    setStatus(outcome);
    if (plan) await startDeliveries(actionId, plan);
    return outcome === 'cancelled' ? { status: 'cancelled' } : { status: 'completed', assetPath };
  }
  if ((await settle(() => steps.completeAction(actionId, assetPath))) === 'cancelled') {
    setStatus('cancelled');
    return { status: 'cancelled' };
  }
  setStatus('completed');
  await announce('completed');
  return { status: 'completed', assetPath };
}

/**
 * An image action between the `settled-render` and `visible-steps` patches: one activity on the provider's queue
 * starts, renders, charges and completes it (`renderAction`), so the result is visible as soon as it is stored and
 * no workflow task stands between the steps. Only a render that failed or was cancelled takes a bookkeeping step, and that step answers how
 * the action really ended (a cancel may lose the race to the render's last step).
 */
async function settledRender(actionId: number, route: ProviderRoute): Promise<ActionOutcome> {
  const provider = proxyActivities<Activities>({ ...TIMEOUTS.provider, ...TIMEOUTS.providerQueue, taskQueue: route.taskQueue, retry: providerRetry });
  setStatus('processing');
  let end: ActionOutcome;
  let announce = true;
  try {
    const { endedElsewhere, ...rendered } = await provider.renderAction(actionId);
    end = rendered;
    announce = !endedElsewhere;
  } catch (err) {
    const ending = isCancellation(err) ? { status: 'cancelled' as const } : { status: 'failed' as const, error: failureMessage(err) };
    end = await settle(() => localBookkeeping.endAction(actionId, ending));
  }
  setStatus(end.status);
  if (announce && end.status !== 'cancelled') await announceOutcome(actionId, end.status, 'local');
  return end;
}
