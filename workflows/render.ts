/**
 * The provider call of an action, on its provider's own task queue. A photo, card or edit is one activity. A video
 * is advanced one short activity at a time with a durable timer in between: the first submits the provider's task
 * and records its id, the next ones check it, the last stores the result. No worker slot is held while the
 * provider renders, a restarted worker carries on checking the same task (never submitting twice), and a render
 * that ends without a result (cancelled, failed for good, past its deadline) asks the provider to stop its task.
 * An image of a provider that renders in the worker's own process (the local renderer, `ProviderRoute.inline`) is
 * a local activity instead, since the `inline-render` patch: it runs in this worker within the workflow task of the
 * steps around it, so a photo takes one workflow task and no task queue round trip; it is recorded as a marker
 * like the bookkeeping steps. When the renderer has no room for it (`RendererBusy`: its places are taken by other
 * renders) it takes the provider's queue as any other render, so that workflow tasks never wait for a render's
 * turn. Workflows started before routing (no route) render on the main queue as they did.
 */
import {
  ActivityFailure, ApplicationFailure, CancellationScope, isCancellation, log, patched, proxyActivities, proxyLocalActivities, RetryPolicy, sleep, uuid4,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FAILURE_TYPES, ProviderRoute, TIMEOUTS } from '../src/temporal/contract';

/** `jobId`: the render of a v2 job's attempt, which moves the job through the attempt's phases itself. */
export async function renderAsset(
  actionId: number, route: ProviderRoute | undefined, retry: RetryPolicy, unrouted: Activities['generateAsset'], jobId?: string,
): Promise<string> {
  if (!route || !patched('provider-routing')) return jobId === undefined ? unrouted(actionId) : unrouted(actionId, jobId);
  return renderRouted(actionId, route, retry, { jobId, inline: Boolean(route.inline) && patched('inline-render') });
}

/**
 * The render of a routed workflow: in-process when `inline` (its route's renderer is the worker's own, since
 * `inline-render`), else, or when that renderer has no room, on its provider's queue; `toQueue` is called just
 * before the render takes the queue (the workflow task then ends: what the workflow shows meanwhile).
 */
export async function renderRouted(
  actionId: number, route: ProviderRoute, retry: RetryPolicy, options: { jobId?: string; inline: boolean; toQueue?: () => void },
): Promise<string> {
  const { jobId } = options;
  if (options.inline) {
    // Named here, from the workflow's seeded randomness: a workflow task lost with its worker chooses the same name
    // when it runs again, so the repeated render replaces the lost one's result rather than lying beside it.
    const resultName = uuid4().replace(/-/g, '');
    try {
      return await proxyLocalActivities<Activities>({ ...TIMEOUTS.inlineRender, retry }).generateAsset(actionId, jobId ?? null, resultName);
    } catch (err) {
      // RendererBusy is not retried (nonRetryable): its render goes to the queue below.
      const cause = err instanceof ActivityFailure ? err.cause : err;
      if (!(cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.rendererBusy)) throw err;
    }
  }
  options.toQueue?.();
  const provider = proxyActivities<Activities>({ ...TIMEOUTS.provider, ...TIMEOUTS.providerQueue, taskQueue: route.taskQueue, retry });
  if (route.pollSeconds === undefined) return jobId === undefined ? provider.generateAsset(actionId) : provider.generateAsset(actionId, jobId);
  const deadline = Date.now() + TIMEOUTS.videoRenderMs;
  try {
    for (;;) {
      const progress = await provider.advanceVideoRender(actionId);
      if (progress.state === 'done') return progress.assetPath;
      if (Date.now() >= deadline) {
        throw ApplicationFailure.create({
          type: FAILURE_TYPES.providerUnavailable, nonRetryable: true, details: [{ code: 'provider_deadline' }],
          message: `The video provider did not finish within ${TIMEOUTS.videoRenderMs / 60_000} minutes`,
        });
      }
      await sleep(route.pollSeconds * 1000);
    }
  } catch (err) {
    if (isCancellation(err)) await stopProviderTask(actionId, route);
    throw err;
  }
}

/**
 * Asks the provider to stop the action's video task, if one is still recorded (an ended task is not): for a
 * render that is over without a result. Nothing to do for images or unrouted workflows.
 */
export async function stopProviderTask(actionId: number, route: ProviderRoute | undefined): Promise<void> {
  if (route?.pollSeconds === undefined) return;
  await CancellationScope.nonCancellable(() => forwardCancel(route.taskQueue, actionId));
}

/** Best effort: the provider is asked to stop the action's task, if one is still recorded (ended ones are not). */
async function forwardCancel(taskQueue: string, actionId: number): Promise<void> {
  const { cancelVideoRender } = proxyActivities<Activities>({ ...TIMEOUTS.bookkeeping, taskQueue, retry: { maximumAttempts: 3 } });
  try {
    await cancelVideoRender(actionId);
  } catch (err) {
    log.warn('the provider could not be asked to stop its task', { actionId, error: String(err) });
  }
}
