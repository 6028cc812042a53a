/**
 * The provider call: load the action's inputs, render with the provider, store the result. The bytes never pass
 * through Temporal; the activity returns the stored asset's key.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Action } from '../src/db/entities';
import { PhotoJob, ProviderError } from '../src/providers/provider';
import { FAILURE_TYPES } from '../src/temporal/contract';
import type { ActivityDeps } from './deps';

/** Runs `work` while heartbeating, so a worker that dies mid-render is noticed within the heartbeat timeout. */
async function heartbeating<T>(work: Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 2_000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

function toFailure(err: unknown): unknown {
  if (err instanceof ProviderError) {
    return ApplicationFailure.create({
      type: err.retryable ? FAILURE_TYPES.providerUnavailable : FAILURE_TYPES.providerRefused,
      message: err.message,
      nonRetryable: !err.retryable,
      details: [{ code: err.code }],
    });
  }
  return err;
}

export function createGenerateAssetActivities({ db, store, provider }: ActivityDeps) {
  return {
    async generateAsset(actionId: number): Promise<string> {
      const action = await db.getRepository(Action).findOneByOrFail({ id: actionId });
      const params = action.params as unknown as Omit<PhotoJob, 'images'> & { inputs: string[] };
      const images = await Promise.all(params.inputs.map((key) => store.read(key)));
      try {
        const rendered = await heartbeating(provider.renderPhoto({ ...params, images }, Context.current().cancellationSignal));
        const key = `results/${actionId}.${rendered.extension}`;
        await store.put(key, rendered.bytes);
        return key;
      } catch (err) {
        throw toFailure(err);
      }
    },
  };
}
