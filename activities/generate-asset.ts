/**
 * The provider call: load the action's inputs, render with the provider, store the result. The bytes never pass
 * through Temporal; the activity returns the stored asset's key.
 */
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Action } from '../src/db/entities';
import type { ActionProduct } from '../src/db/entities/action';
import type { ParamsByProduct } from '../src/domain/action-params';
import { ProviderError, RenderedAsset, VideoProgress } from '../src/providers/provider';
import { FAILURE_TYPES } from '../src/temporal/contract';
import type { ActivityDeps } from './deps';

/** Runs `work` while heartbeating, so a worker that dies mid-render is noticed within the heartbeat timeout. */
async function heartbeating<T>(work: Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
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

/**
 * Where a result is stored: under its action, with 128 random bits in the name, so that a key (and a signed URL
 * for it) cannot be derived from an action id, even by someone who holds the signing secret.
 */
const resultKey = (actionId: number, extension: string): string =>
  `results/${actionId}/${randomBytes(16).toString('hex')}.${extension}`;

/** A video rendered within this activity; a provider that answers with a task is polled by the workflow instead. */
function renderedVideo(progress: VideoProgress): RenderedAsset {
  if (progress.state === 'done') return progress.asset;
  throw new ProviderError(`The video provider answered with a task (${progress.taskId}) where a finished video was expected`, 'unexpected_task', false);
}

type Renderers = { [P in ActionProduct]: (params: ParamsByProduct[P], signal: AbortSignal) => Promise<RenderedAsset> };

export function createGenerateAssetActivities({ db, store, providers }: ActivityDeps) {
  const read = (key: string) => store.read(key);
  const readOptional = (key: string | undefined) => (key ? store.read(key) : Promise.resolve(undefined));

  const render: Renderers = {
    photo: async (p, signal) => providers.image.renderPhoto({ ...p, images: await Promise.all(p.inputs.map(read)) }, signal),
    card: async (p, signal) => providers.image.renderCard({
      ...p, images: await Promise.all(p.inputs.map(read)), designReference: await readOptional(p.designReference),
    }, signal),
    video: async (p, signal) => renderedVideo(await providers.video.startVideo({ ...p, image: await read(p.input), finalFrame: await readOptional(p.finalFrame) }, signal)),
    edit: async (p, signal) => providers.image.renderEdit({ source: await read(p.source), instruction: p.instruction }, signal),
  };

  return {
    async generateAsset(actionId: number): Promise<string> {
      const action = await db.getRepository(Action).findOneByOrFail({ id: actionId });
      try {
        const renderer = render[action.product] as (params: unknown, signal: AbortSignal) => Promise<RenderedAsset>;
        const rendered = await heartbeating(renderer(action.params, Context.current().cancellationSignal));
        const key = resultKey(actionId, rendered.extension);
        await store.put(key, rendered.bytes);
        return key;
      } catch (err) {
        throw toFailure(err);
      }
    },
  };
}
