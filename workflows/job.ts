/**
 * The story of one v2 job: the job's status and phase are this workflow's own steps, written to the read model as
 * it moves. Provider attempts are retried here, not by the activity, so that a scheduled retry is visible
 * (`retry_scheduled`, with a durable timer as the backoff) and running out of attempts ends in `dead_letter`.
 *
 *   queued ─▶ claimed/routing ─▶ running/provider_reserved ─▶ running/provider_running ─┬─▶ running/finalizing
 *                                        ▲                                               │      ─▶ succeeded/postprocessing
 *                                        └──── retry_scheduled (timer) ◀── retryable ────┤      ─▶ succeeded/completed
 *                                                               attempts spent ─▶ dead_letter/failed
 *                                                               refused ─────────▶ failed/failed
 *   any live state ─ cancel ─▶ cancelled/failed (hold released)
 *
 * Since the `fused-steps` patch each move is made by the step it accompanies, in that step's transaction:
 * `startProcessing` claims the job, the render (`generateAsset`) moves it through provider_reserved,
 * provider_running and finalizing as they happen, `completeAction` makes it succeeded/postprocessing with the
 * charge, `failAction` ends it failed or dead_letter with the release. The bookkeeping steps run as local
 * activities (in this worker, within the workflow task, recorded as markers), so the render is the job's only
 * activity task (none for the local renderer's images since `inline-render`: see `renderAsset`); a retry's
 * `retry_scheduled` move is a local activity too. The read model goes through the same
 * statuses and phases in the same order; the search attributes show the state the workflow waits in. Workflows
 * started before the patch replay step by step, as they were recorded (`stepwiseJob`). Since `lean-job` the
 * charge, the delivery plan and the last move are one step (`completeJob`), and the search attributes are written
 * where the workflow task ends (`leanJob`).
 */
import {
  ActivityFailure, ApplicationFailure, CancellationScope, isCancellation, log, patched, proxyActivities, proxyLocalActivities, sleep,
  TimeoutFailure, upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { JobMove, JobPhase, JobStatus } from '../src/jobs/lifecycle';
import {
  FAILURE_TYPES, type JobInput, type JobOutcome, NON_RETRYABLE_FAILURE_TYPES, SEARCH_ATTRIBUTES, SHOWN_FAILURE_TYPES, TIMEOUTS,
} from '../src/temporal/contract';
import { announceOutcome, startDeliveries } from './outcome-deliveries';
import { renderAsset, renderRouted, stopProviderTask } from './render';

const bookkeeping = proxyActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });
const localBookkeeping = proxyLocalActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });

/** One provider attempt per call: the workflow owns the retries. */
const providerRetry = { maximumAttempts: 1 };
const provider = proxyActivities<Activities>({ ...TIMEOUTS.provider, retry: providerRetry });

const settle = <T>(step: () => Promise<T>): Promise<T> => CancellationScope.nonCancellable(step);

class JobCancelled extends Error {}

interface Failure { retryable: boolean; code: string; message: string }

function classify(err: unknown): Failure {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const retryable = !cause.nonRetryable && !NON_RETRYABLE_FAILURE_TYPES.includes(cause.type as never);
    const detail = (cause.details?.[0] as { code?: string } | undefined)?.code;
    if (SHOWN_FAILURE_TYPES.includes(cause.type ?? '')) {
      return { retryable, code: detail ?? (retryable ? 'provider_unavailable' : 'provider_refused'), message: cause.message };
    }
    log.warn('a job attempt failed for an internal reason', { error: String(cause) });
    return { retryable, code: 'internal_error', message: 'Generation failed' };
  }
  if (cause instanceof TimeoutFailure) return { retryable: true, code: 'provider_timeout', message: 'The provider did not answer in time' };
  return { retryable: true, code: 'provider_error', message: 'The provider failed' };
}

export async function jobWorkflow(input: JobInput): Promise<JobOutcome> {
  if (patched('lean-job')) return leanJob(input);
  return patched('fused-steps') ? fusedJob(input) : stepwiseJob(input);
}

function showJob(status: JobStatus, phase: JobPhase): void {
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.jobStatus, value: status }, { key: SEARCH_ATTRIBUTES.jobPhase, value: phase }]);
}

/** The render found its job already ended: cancelled by the API between two of its moves. */
function jobEnded(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.jobEnded;
}

/**
 * The job since the `lean-job` patch: three steps on the happy path (start, render, and `completeJob`, which charges,
 * plans the deliveries and, with none planned, finishes the job), and its search attributes written only where the
 * workflow task ends and they can be seen: before a render on the provider's queue, before a retry's backoff, and
 * at the end. (Within one workflow task every upsert reaches the server together, when the task completes: an
 * in-process photo showed `running`, `succeeded/postprocessing` and `completed` at once, three index writes.) The
 * patches of `jobWorkflow`'s older paths are implied, so none of them is recorded.
 */
async function leanJob({ jobId, actionId, maxAttempts, backoffMs, provider: route }: JobInput): Promise<JobOutcome> {
  try {
    if ((await settle(() => localBookkeeping.startProcessing(actionId, jobId))) === 'cancelled') throw new JobCancelled();

    let assetPath: string | undefined;
    for (let attempt = 1; assetPath === undefined; attempt++) {
      try {
        const toQueue = () => showJob('running', 'provider_running');
        if (route) {
          assetPath = await renderRouted(actionId, route, providerRetry, { jobId, inline: Boolean(route.inline), toQueue });
        } else {
          toQueue();
          assetPath = await provider.generateAsset(actionId, jobId);
        }
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (jobEnded(err)) throw new JobCancelled();
        const failure = classify(err);
        if (failure.retryable && attempt < maxAttempts) {
          const delay = backoffMs * 2 ** (attempt - 1);
          showJob('retry_scheduled', 'provider_reserved');
          const moved = await settle(() => localBookkeeping.moveJob(jobId, {
            status: 'retry_scheduled', phase: 'provider_reserved', nextAttemptInMs: delay, retryable: true, errorCode: failure.code, errorMessage: failure.message,
          }));
          if (moved === 'cancelled') throw new JobCancelled();
          await sleep(delay);
          continue;
        }
        const status = failure.retryable ? 'dead_letter' : 'failed';
        await stopProviderTask(actionId, route);
        await settle(() => localBookkeeping.failAction(actionId, failure.message, { jobId, status, errorCode: failure.code, retryable: failure.retryable }));
        showJob(status, 'failed');
        await announceOutcome(actionId, 'failed', 'local');
        return { status, error: failure.message };
      }
    }

    const { outcome, plan } = await settle(() => localBookkeeping.completeJob(actionId, assetPath!, jobId));
    if (outcome === 'cancelled') throw new JobCancelled();
    if (plan && plan.deliveries.length > 0) {
      showJob('succeeded', 'postprocessing');
      await startDeliveries(actionId, plan);
      await settle(() => localBookkeeping.finishJobPostprocessing(jobId));
    }
    showJob('succeeded', 'completed');
    return { status: 'succeeded', assetPath: assetPath! };
  } catch (err) {
    if (!(err instanceof JobCancelled) && !isCancellation(err)) throw err;
    await stopProviderTask(actionId, route);
    await settle(() => localBookkeeping.cancelJob(jobId, actionId));
    showJob('cancelled', 'failed');
    return { status: 'cancelled' };
  }
}

/** The job between the `fused-steps` and `lean-job` patches: three steps on the happy path, the render the only activity task. */
async function fusedJob({ jobId, actionId, maxAttempts, backoffMs, provider: route }: JobInput): Promise<JobOutcome> {
  try {
    if ((await settle(() => localBookkeeping.startProcessing(actionId, jobId))) === 'cancelled') throw new JobCancelled();

    let assetPath: string | undefined;
    for (let attempt = 1; assetPath === undefined; attempt++) {
      showJob('running', 'provider_running');
      try {
        assetPath = await renderAsset(actionId, route, providerRetry, provider.generateAsset, jobId);
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (jobEnded(err)) throw new JobCancelled();
        const failure = classify(err);
        if (failure.retryable && attempt < maxAttempts) {
          const delay = backoffMs * 2 ** (attempt - 1);
          showJob('retry_scheduled', 'provider_reserved');
          const moved = await settle(() => localBookkeeping.moveJob(jobId, {
            status: 'retry_scheduled', phase: 'provider_reserved', nextAttemptInMs: delay, retryable: true, errorCode: failure.code, errorMessage: failure.message,
          }));
          if (moved === 'cancelled') throw new JobCancelled();
          await sleep(delay);
          continue;
        }
        const status = failure.retryable ? 'dead_letter' : 'failed';
        await stopProviderTask(actionId, route);
        await settle(() => localBookkeeping.failAction(actionId, failure.message, { jobId, status, errorCode: failure.code, retryable: failure.retryable }));
        showJob(status, 'failed');
        await announceOutcome(actionId, 'failed', 'local');
        return { status, error: failure.message };
      }
    }

    if ((await settle(() => localBookkeeping.completeAction(actionId, assetPath!, jobId))) === 'cancelled') throw new JobCancelled();
    showJob('succeeded', 'postprocessing');
    await announceOutcome(actionId, 'completed', 'local');
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.jobPhase, value: 'completed' }]);
    await settle(() => localBookkeeping.finishJobPostprocessing(jobId));
    return { status: 'succeeded', assetPath: assetPath! };
  } catch (err) {
    if (!(err instanceof JobCancelled) && !isCancellation(err)) throw err;
    await stopProviderTask(actionId, route);
    await settle(() => localBookkeeping.cancelJob(jobId, actionId));
    showJob('cancelled', 'failed');
    return { status: 'cancelled' };
  }
}

/** The job as workflows started before the `fused-steps` patch run it: each move an activity of its own. */
async function stepwiseJob({ jobId, actionId, maxAttempts, backoffMs, provider: route }: JobInput): Promise<JobOutcome> {
  const move = async (step: JobMove): Promise<void> => {
    showJob(step.status, step.phase);
    if ((await settle(() => bookkeeping.moveJob(jobId, step))) === 'cancelled') throw new JobCancelled();
  };

  try {
    await move({ status: 'claimed', phase: 'routing' });
    if ((await settle(() => bookkeeping.startProcessing(actionId))) === 'cancelled') throw new JobCancelled();

    let assetPath: string | undefined;
    for (let attempt = 1; assetPath === undefined; attempt++) {
      await move({ status: 'running', phase: 'provider_reserved', attempt: true });
      await move({ status: 'running', phase: 'provider_running' });
      try {
        assetPath = await renderAsset(actionId, route, providerRetry, provider.generateAsset);
      } catch (err) {
        if (isCancellation(err)) throw err;
        const failure = classify(err);
        if (failure.retryable && attempt < maxAttempts) {
          const delay = backoffMs * 2 ** (attempt - 1);
          await move({ status: 'retry_scheduled', phase: 'provider_reserved', nextAttemptInMs: delay, retryable: true, errorCode: failure.code, errorMessage: failure.message });
          await sleep(delay);
          continue;
        }
        const status = failure.retryable ? 'dead_letter' : 'failed';
        await stopProviderTask(actionId, route);
        await settle(() => bookkeeping.failAction(actionId, failure.message));
        await move({ status, phase: 'failed', retryable: failure.retryable, errorCode: failure.code, errorMessage: failure.message });
        await announceOutcome(actionId, 'failed');
        return { status, error: failure.message };
      }
    }

    await move({ status: 'running', phase: 'finalizing' });
    if ((await settle(() => bookkeeping.completeAction(actionId, assetPath!))) === 'cancelled') throw new JobCancelled();
    await move({ status: 'succeeded', phase: 'postprocessing', retryable: false });
    await announceOutcome(actionId, 'completed');
    // The job is already terminal in the read model; only the search attribute tells that postprocessing ended.
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.jobPhase, value: 'completed' }]);
    await settle(() => bookkeeping.finishJobPostprocessing(jobId));
    return { status: 'succeeded', assetPath: assetPath! };
  } catch (err) {
    if (!(err instanceof JobCancelled) && !isCancellation(err)) throw err;
    await stopProviderTask(actionId, route); // e.g. cancelled while a retry was scheduled
    await settle(() => bookkeeping.cancelJob(jobId, actionId));
    showJob('cancelled', 'failed');
    return { status: 'cancelled' };
  }
}
