/**
 * The provider call: load the action's inputs, render with the provider, store the result. The bytes never pass
 * through Temporal; the activity returns the stored asset's key.
 */
import { timedProviderCall } from '../src/metrics/registry';
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { msToNumber } from '@temporalio/common/lib/time';
import type { Action } from '../src/db/entities';
import { loadAction } from '../src/actions/store';
import type { ActionProduct } from '../src/db/entities/action';
import type { ParamsByProduct } from '../src/actions/params';
import { holdsInputKey } from '../src/generation/images';
import { knownWhole } from '../src/providers/inputs';
import { ProviderError, RenderedAsset, VideoProgress } from '../src/providers/provider';
import { FAILURE_TYPES, TIMEOUTS } from '../src/temporal/contract';
import { databaseAway } from '../src/db/sql';
import { isValidAssetKey } from '../src/storage/asset-store';
import { makeThumbnail, thumbnailKeyOf } from '../src/media/thumbnails';
import { log } from '../src/log';
import { jobAttempt, JobMove, moveJobRecord } from '../src/jobs/lifecycle';
import type { ActionEnd } from '../src/actions/lifecycle';
import {
  completeRendered, forgetProviderTask, providerTaskOf, recordedEnd, recordProgress, recordProviderTask, recordStoring, startAction,
} from '../src/actions/lifecycle';
import type { ActivityDeps } from './deps';
import { providersOf } from '../src/providers';
import type { SandboxScenario } from '../src/providers/sandbox';

type ActionProviders = ReturnType<typeof providersOf>;

/**
 * Runs `work` while heartbeating, so a worker that dies mid-render is noticed within the heartbeat timeout.
 * `details` go with every heartbeat (each heartbeat replaces the last one's details), for a retry to read.
 */
async function heartbeating<T>(work: Promise<T>, details?: RenderProgress): Promise<T> {
  const ctx = Context.current();
  // A local activity (an in-process render) has no heartbeats: its worker holds the workflow task meanwhile.
  if (ctx.info.isLocal) return work;
  ctx.heartbeat(details);
  const timer = setInterval(() => ctx.heartbeat(details), 2_000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Runs a short database step inside a provider activity until the database answers, heartbeating meanwhile (a
 * step waiting on a lock must not look like a dead worker), waiting as the bookkeeping steps' retry policy does
 * (`TIMEOUTS.bookkeepingRetry`: 1 s, then twice as long each time up to 30 s). Other errors fail the attempt; a
 * cancel request stops the waiting.
 */
async function untilDatabaseAnswers<T>(step: () => Promise<T>, details?: RenderProgress): Promise<T> {
  const ctx = Context.current();
  const { initialInterval, maximumInterval } = TIMEOUTS.bookkeepingRetry;
  for (let waitMs = msToNumber(initialInterval); ; waitMs = Math.min(waitMs * 2, msToNumber(maximumInterval))) {
    try {
      return await heartbeating(step(), details);
    } catch (err) {
      if (!databaseAway(err)) throw err;
      ctx.log.warn('the database did not answer; trying again', { error: String(err), inMs: waitMs });
      await ctx.sleep(waitMs);
    }
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
 * Where a result is stored: under its action, with 128 bits in the name (random, or `name`: an in-process render's,
 * keyed by the service secret), so that a key (and a signed URL for it) cannot be derived from an action id, even by
 * someone who holds the signing secret.
 */
const resultKey = (actionId: number, extension: string, name = randomBytes(16).toString('hex')): string =>
  `results/${actionId}/${name}.${extension}`;

/** A result's seed chosen by its workflow (`generateAsset`'s `resultName`): 32 lowercase hex digits. */
const RESULT_NAME = /^[0-9a-f]{32}$/;

/** A video rendered within this activity; a provider that answers with a task is polled by the workflow instead. */
function renderedVideo(progress: VideoProgress): RenderedAsset {
  if (progress.state === 'done') return progress.asset;
  throw new ProviderError(`The video provider answered with a task (${progress.taskId}) where a finished video was expected`, 'unexpected_task', false);
}

/** What a `renderAction` attempt has done, in its heartbeats: the stored result, once there is one. */
interface RenderProgress { assetPath: string }

/** How an image action's render ended; `endedElsewhere`: a failure recorded before it began, not this workflow's to announce. */
export type RenderEnd = ActionEnd & { endedElsewhere?: true };

/** A provider's progress fraction (0 to 1) as a whole percent, or null when it reports none. */
export function progressPercent(fraction: number | undefined): number | null {
  if (fraction === undefined || !Number.isFinite(fraction)) return null;
  return Math.max(0, Math.min(100, Math.round(fraction * 100)));
}

export type VideoStep = { state: 'done'; assetPath: string } | { state: 'running'; taskId: string; progress?: number };

/**
 * A renderer loads its inputs, says `started` just before the provider's call, and answers what it rendered with
 * the action's providers (`providersOf`: the sandbox renderer's for a test key's action).
 */
type Renderers = {
  [P in ActionProduct]: (params: ParamsByProduct[P], signal: AbortSignal, started: () => Promise<void>, chosen: ActionProviders) => Promise<RenderedAsset>
};

export function createGenerateAssetActivities({ db, store, providers, secrets }: ActivityDeps) {
  /**
   * Reads the inputs of an action's params; those decoded whole on arrival (`wholeInputs`) are `knownWhole` when
   * the bytes read are still the ones stored under their key (content-addressed: a file changed since is decoded).
   */
  const reader = (p: { wholeInputs?: string[] }) => {
    const read = async (key: string) => {
      const bytes = await store.read(key);
      return p.wholeInputs?.includes(key) && holdsInputKey(key, bytes) ? knownWhole(bytes) : bytes;
    };
    return { read, readOptional: (key: string | undefined) => (key ? read(key) : Promise.resolve(undefined)) };
  };
  const read = (key: string) => store.read(key);
  const loaded = async <T>(inputs: Promise<T>, started: () => Promise<void>): Promise<T> => {
    const value = await inputs;
    await started();
    return value;
  };

  /** A provider call, timed into imagery_provider_call_duration_seconds (inputs are read before it starts). */
  const timed = <T>(provider: { name: string }, operation: string, call: () => Promise<T>) => timedProviderCall(provider.name, operation, call);

  const render: Renderers = {
    photo: async (p, signal, started, { image }) => {
      const { read } = reader(p);
      const images = await loaded(Promise.all(p.inputs.map(read)), started);
      return timed(image, 'render_photo', () => image.renderPhoto({ ...p, images }, signal));
    },
    card: async (p, signal, started, { image }) => {
      const { read, readOptional } = reader(p);
      const [images, designReference] = await loaded(Promise.all([Promise.all(p.inputs.map(read)), readOptional(p.designReference)]), started);
      return timed(image, 'render_card', () => image.renderCard({ ...p, images, designReference }, signal));
    },
    video: async (p, signal, started, { video }) => {
      const { read, readOptional } = reader(p);
      const [input, finalFrame] = await loaded(Promise.all([read(p.input), readOptional(p.finalFrame)]), started);
      return renderedVideo(await timed(video, 'start_video', () => video.startVideo({ ...p, image: input, finalFrame }, signal)));
    },
    edit: async (p, signal, started, { image }) => {
      const source = await loaded(read(p.source), started);
      return timed(image, 'render_edit', () => image.renderEdit({ source, instruction: p.instruction }, signal));
    },
  };

  /**
   * The sandbox drill of a test key's action, acted out just before its provider call (nothing for others). The
   * attempt is the v2 job's (its workflow retries) or the activity's (a v1 action's retry policy).
   */
  const drill = async (action: Action, jobId: string | undefined, signal: AbortSignal): Promise<void> => {
    const sandbox = providersOf(providers, action).drill;
    const scenario = (action.params as { sandbox_scenario?: SandboxScenario }).sandbox_scenario;
    if (!sandbox || !scenario) return;
    const attempt = jobId ? await jobAttempt(db.manager, jobId) : Context.current().info.attempt;
    await sandbox.drill(scenario, attempt, signal);
  };

  /** A job found ended (cancelled) stops the render. */
  const jobHasEnded = (jobId: string): never => {
    throw ApplicationFailure.create({ type: FAILURE_TYPES.jobEnded, message: `job ${jobId} already ended`, nonRetryable: true });
  };
  /** Moves the job the render belongs to; a job that already ended (cancelled) stops the render here. */
  const moveJob = async (jobId: string | undefined, move: JobMove): Promise<void> => {
    if (jobId && !(await moveJobRecord(db.manager, jobId, move))) jobHasEnded(jobId);
  };

  const videoJob = async (action: Action) => {
    const p = action.params as unknown as ParamsByProduct['video'];
    const { read, readOptional } = reader(p);
    return { ...p, image: await read(p.input), finalFrame: await readOptional(p.finalFrame) };
  };
  /** `key` when it names a stored result of this action (what a heartbeat carried), else undefined. */
  const storedResult = async (actionId: number, key: string | undefined): Promise<string | undefined> => {
    if (typeof key !== 'string' || !key.startsWith(`results/${actionId}/`) || !isValidAssetKey(key)) return undefined;
    const found = await store.open(key);
    found?.stream.destroy();
    return found ? key : undefined;
  };
  /**
   * Stores a result; an image's thumbnail first, so that a result stored with one always has it. The thumbnail is
   * best effort: one that cannot be made or recorded is logged, and the paid render goes on without it (a list
   * then shows no picture for it), never retried for its sake.
   */
  const storeResult = async (actionId: number, rendered: RenderedAsset, name?: string, jobId?: string) => {
    const key = resultKey(actionId, rendered.extension, name);
    let thumbnailed = false;
    if (rendered.extension !== 'mp4') {
      try {
        await store.put(thumbnailKeyOf(key), await makeThumbnail(rendered.bytes));
        thumbnailed = true;
      } catch (err) {
        log.warn('a result\'s thumbnail could not be made; the result is stored without one', { actionId, error: (err as Error).message });
      }
    }
    // The thumbnail recorded and the job moved to finalizing (storing the result, then charging) in one statement.
    if (!(await recordStoring(db.manager, actionId, thumbnailed, jobId ? { jobId, move: { status: 'running', phase: 'finalizing' } } : undefined))) jobHasEnded(jobId!);
    await store.put(key, rendered.bytes);
    return key;
  };

  /**
   * Renders the action and stores the result; given a v2 job, moves it through the attempt's phases on the way
   * (see `generateAsset`).
   */
  const renderAndStore = async (action: Action, jobId?: string, resultName?: string): Promise<string> => {
    try {
      const renderer = render[action.product] as Renderers['photo'];
      return await heartbeating((async () => {
        await moveJob(jobId, { status: 'running', phase: 'provider_reserved', attempt: true });
        const signal = Context.current().cancellationSignal;
        const started = async () => {
          await moveJob(jobId, { status: 'running', phase: 'provider_running' });
          await drill(action, jobId, signal);
        };
        const rendered = await renderer(action.params as never, signal, started, providersOf(providers, action));
        return storeResult(action.id, rendered, resultName, jobId);
      })());
    } catch (err) {
      throw toFailure(err);
    }
  };

  return {
    /**
     * One step of a video render: submits the provider's task when the action has none (and records its id at
     * once), else checks the recorded task; stores the video when it is done. A task that ended in failure is
     * forgotten, so a retry submits a new one; any other retry checks the same task again.
     */
    async advanceVideoRender(actionId: number): Promise<VideoStep> {
      const action = await loadAction(db.manager, actionId);
      const taskId = action.providerTaskId;
      const signal = Context.current().cancellationSignal;
      const { video } = providersOf(providers, action);
      try {
        // Heartbeats cover the whole step: a check may take a provider request, a download and a store.
        return await heartbeating((async (): Promise<VideoStep> => {
          const progress = taskId
            ? await timed(video, 'check_video', () => video.checkVideo(taskId, signal))
            : await videoJob(action).then(async (job) => {
              await drill(action, undefined, signal);
              return timed(video, 'start_video', () => video.startVideo(job, signal));
            });
          if (progress.state === 'done') return { state: 'done', assetPath: await storeResult(actionId, progress.asset) };
          if (!taskId) await recordProviderTask(db.manager, actionId, progress.taskId);
          // The provider's percent (Runway's `progress`, 0 to 1) for live progress; a change adds an action event.
          const percent = progressPercent(progress.progress);
          if (percent !== null) await recordProgress(db.manager, actionId, percent);
          return { state: 'running', taskId: progress.taskId, progress: progress.progress };
        })());
      } catch (err) {
        if (taskId && err instanceof ProviderError && err.taskEnded) {
          await forgetProviderTask(db.manager, actionId, taskId);
        }
        throw toFailure(err);
      }
    },

    /** Asks the provider to stop the action's task, if it has one (a cancelled action). */
    async cancelVideoRender(actionId: number): Promise<void> {
      const taskId = await providerTaskOf(db.manager, actionId);
      if (!taskId) return;
      const { video } = providersOf(providers, await loadAction(db.manager, actionId));
      await timed(video, 'cancel_video', () => video.cancelVideo(taskId));
    },

    /**
     * Renders the action and stores the result. Given a v2 job's id (one attempt of the job workflow), it also
     * moves the job through the attempt's phases as they happen: running/provider_reserved (the attempt counted)
     * while the inputs load, provider_running during the provider's call, finalizing while the result is stored.
     * A job found ended (cancelled meanwhile) fails the attempt with `JobEnded`, nothing more rendered or stored.
     *
     * `resultName`, for an in-process render (a local activity, `ProviderRoute.inline`): the seed of the result's
     * name, chosen by the workflow from its seeded randomness; the name is keyed by the service secret
     * (`SecretBox.nameFor`), so it is 128 bits no one can derive from the run. A workflow task lost with its worker
     * runs again elsewhere and chooses the same seed, so its render is stored over the lost one's, not beside it.
     * An in-process render takes a place of its renderer first (`reserveInProcess`); with none free it fails at
     * once with `RendererBusy`, and the workflow sends the render to the provider's queue. An action already
     * completed (a task lost after the completion was committed, or a workflow reset after it ended) is answered
     * with its result, nothing rendered again.
     */
    async generateAsset(actionId: number, jobId?: string | null, resultName?: string): Promise<string> {
      if (resultName !== undefined && !RESULT_NAME.test(resultName)) throw ApplicationFailure.nonRetryable(`invalid result name ${JSON.stringify(resultName)}`);
      const action = await loadAction(db.manager, actionId);
      if (action.status === 'completed' && action.assetPath) return action.assetPath;
      if (resultName === undefined) return renderAndStore(action, jobId ?? undefined);
      const release = providersOf(providers, action).image.reserveInProcess?.();
      if (!release) {
        throw ApplicationFailure.create({ type: FAILURE_TYPES.rendererBusy, nonRetryable: true, message: 'every in-process render place is taken: the render takes the queue' });
      }
      try {
        return await renderAndStore(action, jobId ?? undefined, secrets.nameFor(`result\n${actionId}\n${resultName}`));
      } finally {
        release();
      }
    },

    /**
     * A whole image action in one activity on its provider's queue (workflows since `settled-render`): starts it
     * (pending -> processing), renders and stores, then charges and completes it in one transaction, so that the
     * result is visible the moment it is stored, without waiting for a workflow task. An action found closed
     * (cancelled, failed, or completed by an earlier attempt whose answer was lost) is not rendered: the answer is
     * how it ended, as recorded. The answer after a render is also the recorded ending: a cancel or another attempt
     * may have closed the action first. A cancel request that reaches the render before its last step stops it
     * there. The two transactions are retried, heartbeating, until the database answers: an outage after a render
     * does not throw the render away, and neither does a lost worker: the stored result's key goes with every
     * heartbeat after the store, and a retry that finds it charges that result instead of rendering another.
     */
    async renderAction(actionId: number): Promise<RenderEnd> {
      const ctx = Context.current();
      // An earlier attempt that stored its result and then lost its worker (or its answer) left the result's key in
      // its heartbeats: that result is charged, not a second one rendered. Its heartbeats go on carrying it.
      const earlier = await storedResult(actionId, (ctx.info.heartbeatDetails as RenderProgress | undefined)?.assetPath);
      const carried = earlier ? { assetPath: earlier } : undefined;
      const action = await loadAction(db.manager, actionId);
      const closed = await untilDatabaseAnswers(
        () => db.transaction(async (m) => ((await startAction(m, actionId)) === 'started' ? undefined : recordedEnd(m, actionId))), carried);
      // Failed before this render began: by the API (a start it abandoned, never accepted) or the reconciler, which
      // announce for themselves, or not at all.
      if (closed) return closed.status === 'failed' ? { ...closed, endedElsewhere: true } : closed;
      const progress: RenderProgress = carried ?? { assetPath: await renderAndStore(action) };
      if (ctx.cancellationDetails?.cancelRequested) throw ctx.cancellationSignal.reason;
      ctx.heartbeat(progress);
      return untilDatabaseAnswers(() => db.transaction(async (m) => {
        await completeRendered(m, actionId, progress.assetPath);
        return recordedEnd(m, actionId);
      }), progress);
    },
  };
}
