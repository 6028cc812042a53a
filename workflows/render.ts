/**
 * The provider call of an action, on its provider's own task queue. A photo, card or edit is one activity. A video
 * is advanced one short activity at a time with a durable timer in between: the first submits the provider's task
 * and records its id, the next ones check it, the last stores the result. No worker slot is held while the
 * provider renders, a restarted worker carries on checking the same task (never submitting twice), and a cancel is
 * forwarded to the provider. Workflows started before routing (no route) render on the main queue as they did.
 */
import { CancellationScope, isCancellation, log, patched, proxyActivities, RetryPolicy, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { ProviderRoute, TIMEOUTS } from '../src/temporal/contract';

export async function renderAsset(
  actionId: number, route: ProviderRoute | undefined, retry: RetryPolicy, unrouted: Activities['generateAsset'],
): Promise<string> {
  if (!route || !patched('provider-routing')) return unrouted(actionId);
  const provider = proxyActivities<Activities>({ ...TIMEOUTS.provider, taskQueue: route.taskQueue, retry });
  if (route.pollSeconds === undefined) return provider.generateAsset(actionId);
  try {
    for (;;) {
      const progress = await provider.advanceVideoRender(actionId);
      if (progress.state === 'done') return progress.assetPath;
      await sleep(route.pollSeconds * 1000);
    }
  } catch (err) {
    if (isCancellation(err)) await CancellationScope.nonCancellable(() => forwardCancel(route.taskQueue, actionId));
    throw err;
  }
}

/** Best effort: the provider is asked to stop its task; the action is cancelled and released either way. */
async function forwardCancel(taskQueue: string, actionId: number): Promise<void> {
  const { cancelVideoRender } = proxyActivities<Activities>({ ...TIMEOUTS.bookkeeping, taskQueue, retry: { maximumAttempts: 3 } });
  try {
    await cancelVideoRender(actionId);
  } catch (err) {
    log.warn('the provider could not be asked to stop its task', { actionId, error: String(err) });
  }
}
