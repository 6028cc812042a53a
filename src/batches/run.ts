/**
 * What a batch's workflow asks of the database, one step at a time: start the batch, take its next step (wait for
 * room in its window, then accept its next items, each as a v1 request of its type is accepted: images read, fields
 * detected, priced, then held with its v2 job and the item's claim in one statement, and start their jobs), wait for
 * its last items, and end it. Runs in the worker (activities/batch.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { EntityManager } from 'typeorm';
import { callerOfKey } from '../accounts/accounts';
import type { EditParams } from '../actions/params';
import { BatchItemNotClaimed, newVersionOf, type NewAction, routeFor, submitAction, type SubmitServices } from '../actions/submit';
import { readPriceList } from '../billing/pricing';
import { AppError, ValidationFailed } from '../errors';
import { databaseAway } from '../db/sql';
import { demandOf, interactiveDemandOrNone } from './interactive-demand';
import { log } from '../log';
import { editableSource, generationPreparation, newVideoCard, type CardOrder, type PhotoOrder, type VideoOrder } from '../generation/prepare';
import type { JobType } from '../jobs/lifecycle';
import type { SandboxScenario } from '../providers/sandbox';
import type { Caller } from '../services';
import type { AcceptedItem, BatchStep, ItemInFlight, JobInput } from '../temporal/contract';
import { startJobWorkflow } from '../temporal/starts';
import {
  type BatchRow, type BatchStatus, claimItemPart, closeItem, closePendingItems, endedItems, finishBatchRecord, type ItemType, pendingItems, readBatch,
  startBatchRecord,
} from './store';

export interface BatchRunServices extends SubmitServices {
  config: SubmitServices['config'];
  /** Items of one batch in flight at once, and of one account's batches together. */
  batchLimits: BatchLimits;
}

/** How a step reports that it lives (an activity's heartbeat) and waits (an activity's cancellable sleep). */
export interface StepContext { progress?: () => void; attempt?: number; sleep?: (ms: number) => Promise<void> }

export interface BatchLimits {
  itemsInFlight: number;
  accountItemsInFlight: number;
  /** The interactive demand at which a batch's steps yield (BATCH_YIELD_AT); `null` or left out: they never do. */
  yieldAt?: number | null;
}

/** What a batch's workflow learns when it starts: whether to run, and the budget it runs under. */
export interface BatchStart { run: boolean; maxSparks: number | null }

export async function startBatch({ db }: Pick<BatchRunServices, 'db'>, batchId: string): Promise<BatchStart> {
  const batch = await startBatchRecord(db, batchId);
  return { run: batch?.status === 'running', maxSparks: batch?.max_sparks ?? null };
}


/** Where a batch's workflow is: after which item, with how many in flight, having spent what; `most`: accept no more than this. */
export interface AcceptCursor { after: number; inFlight: number; spent: number; most?: number }

export interface ItemsTaken {
  accepted: AcceptedItem[];
  /** Every item up to this position is accepted or closed. */
  lastPosition: number;
  /** Why the batch starts nothing more: the next item would pass the budget (or the balance), or it was cancelled. */
  stop?: 'budget' | 'cancelled';
  /** No item is left to start after `lastPosition`. */
  done: boolean;
  /** How many items this batch may have in flight now (its share of the account's). */
  window: number;
}

/**
 * Items accepted per step at most: each may fetch images and ask the text provider, and its job starts only when the
 * step returns, so a step stays short (the step heartbeats after each item).
 */
const ACCEPT_PAGE = 10;

/** Tries of an accept step before an item whose preparation fails for no known reason fails (the step's retries). */
const PREPARE_ATTEMPTS = 5;

const JOB_TYPE: Record<ItemType, JobType> = { photo: 'generation.execute', card: 'card.execute', video: 'video.execute', edit: 'edit.execute' };

/** Refusals that mean the money ran out: the batch stops starting items. */
const MONEY_CODES = ['insufficient_tokens', 'spend_limit_exceeded'];

/**
 * The step of batches whose runs started before the `accept-starts-items` patch, which start their items as child
 * workflows: accepts the batch's items after `after`, in order, as many as its window has room for besides the
 * `inFlight` ones, while `spent` (what its accepted items hold or were charged, less what was released) plus the next
 * item's price stays within its `max_sparks`, and answers them for the workflow to start. An item already accepted by
 * an earlier try of this step (its job recorded, its child not started) is answered again, not accepted twice. An
 * item whose request cannot be served (an image unreadable, an edit's source gone) is closed `failed` with the error,
 * and nothing is held for it.
 */
export async function acceptNextItems(
  services: BatchRunServices, batchId: string, cursor: AcceptCursor, step: StepContext = {},
): Promise<ItemsTaken> {
  step.progress?.();
  const { db } = services;
  const batch = await readBatch(db.manager, batchId);
  const window = batch ? await windowOf(db.manager, batch, services.batchLimits) : 1;
  if (!batch || batch.status !== 'running') return { accepted: [], lastPosition: cursor.after, done: false, window, stop: 'cancelled' };
  const room = Math.min(window - cursor.inFlight, cursor.most ?? Infinity);
  if (room <= 0) return { accepted: [], lastPosition: cursor.after, done: false, window };
  const taken = await acceptPage(services, batch, cursor.after, Math.min(room, ACCEPT_PAGE), cursor.spent, step);
  return { ...taken, accepted: taken.accepted.map(({ position, accountId, price, job }) => ({ position, accountId, price, job })), window };
}

/** An item accepted: its price held, its job recorded (of this type), to be started. */
interface TakenItem extends AcceptedItem { type: JobType }

/** The items of a page: accepted, each holding its price (the earlier ones of a page the budget stopped included). */
interface PageTaken { accepted: TakenItem[]; lastPosition: number; stop?: 'budget' | 'cancelled'; done: boolean }

/** Accepts up to `room` pending items after `after`, in order, within the budget (`spent` so far). */
async function acceptPage(services: BatchRunServices, batch: BatchRow, after: number, room: number, spent: number, step: StepContext): Promise<PageTaken> {
  const { db } = services;
  const caller = await callerOfKey(db.manager, batch.key_id, (batch.sandbox_scenario ?? undefined) as SandboxScenario | undefined);
  if (!caller) throw new Error(`the key ${batch.key_id} of batch ${batch.id} does not exist`);
  const taken: PageTaken = { accepted: [], lastPosition: after, done: false };
  const items = await pendingItems(db.manager, batch.id, after, room);
  for (const item of items) {
    const outcome = item.job_id !== null
      ? { accepted: acceptedItem(services, batch, caller, item as typeof item & { job_id: string; action_id: number }) } // by an earlier try of this step
      : await acceptItem(services, batch, caller, item, spent, step.attempt ?? 1);
    if (outcome.stop) return { ...taken, stop: outcome.stop };
    if (outcome.accepted) {
      taken.accepted.push(outcome.accepted);
      spent += outcome.accepted.price;
    }
    taken.lastPosition = item.position;
    step.progress?.();
  }
  return { ...taken, done: items.length < room };
}

/** Where a batch's run is (since `accept-starts-items`): `inFlight`, the items it started and has not seen end. */
export interface StepCursor { after: number; spent: number; inFlight: ItemInFlight[]; most?: number }

/** A step waits for room at most this long, then answers what ended meanwhile (its workflow asks again). */
const STEP_WAIT_MS = 60_000;
/** How often a waiting step looks at its items: soon after something ended, then less often while nothing does. */
const FIRST_LOOK_MS = 100;
const LAST_LOOK_MS = 2_000;
/** While a batch yields to interactive work, it starts at most one item this often. */
const YIELDING_PACE_MS = 1_000;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The items of `inFlight` that have ended, looked at until `enough` holds of them (or the step has waited
 * STEP_WAIT_MS): soon after each change, less often while nothing changes. Answers the batch's status too, at the
 * last look.
 */
async function waitForEnded(
  services: Pick<BatchRunServices, 'db'>, batchId: string, inFlight: ItemInFlight[],
  enough: (ended: number, status?: BatchStatus) => boolean, step: StepContext,
): Promise<{ status?: BatchStatus; ended: { position: number; released: boolean }[] }> {
  const sleep = step.sleep ?? pause;
  const positions = inFlight.map((item) => item.position);
  const until = Date.now() + STEP_WAIT_MS;
  let seen = await endedItems(services.db.manager, batchId, positions);
  for (let wait = FIRST_LOOK_MS; !enough(seen.ended.length, seen.status) && Date.now() + wait <= until;) {
    step.progress?.();
    await sleep(wait);
    const again = await endedItems(services.db.manager, batchId, positions);
    wait = again.ended.length > seen.ended.length ? FIRST_LOOK_MS : Math.min(wait * 2, LAST_LOOK_MS);
    seen = again;
  }
  return seen;
}

/**
 * A batch's step since `accept-starts-items`: waits until its window has room for a page of items (ACCEPT_PAGE, or
 * half the window when that is less; whatever room there is after STEP_WAIT_MS) besides the `inFlight` ones that have
 * not ended, then accepts its next items after `after` (while the interactive demand is at BATCH_YIELD_AT or more,
 * one item, and waits YIELDING_PACE_MS before it answers: the batch yields the machine to interactive work,
 * docs/design.md), in order, within the budget (`spent`, less what ended items released), and starts their jobs on
 * the batch's queue: ordinary v2 jobs, not its children, so that their starts and ends are no events of the
 * batch's history (docs/design.md, "Catalogue batches"). A retried step answers the items an earlier try accepted
 * and starts them again (a start finds the job's workflow already there). Answers the items it saw end, the items it
 * started, and why it stops, if it does.
 */
export async function takeBatchStep(
  services: BatchRunServices & { temporal: Client }, batchId: string, cursor: StepCursor, step: StepContext = {},
): Promise<BatchStep> {
  step.progress?.();
  const { db } = services;
  const batch = await readBatch(db.manager, batchId);
  const idle: BatchStep = { ended: [], accepted: [], lastPosition: cursor.after, done: false };
  if (!batch || batch.status !== 'running') {
    return { ...idle, ended: cursor.inFlight.length > 0 ? (await endedItems(db.manager, batchId, cursor.inFlight.map((i) => i.position))).ended : [], stop: 'cancelled' };
  }
  const window = await windowOf(db.manager, batch, services.batchLimits);
  const page = Math.max(1, Math.min(ACCEPT_PAGE, window, cursor.most ?? Infinity));
  // Room for a page, or for half the window when that is less (a small window is never held up by its slowest item).
  const enoughRoom = Math.min(page, Math.ceil(window / 2));
  const seen = cursor.inFlight.length === 0
    ? { status: batch.status, ended: [] }
    : await waitForEnded(services, batchId, cursor.inFlight, (ended, status) => status !== 'running' || cursor.inFlight.length - ended + enoughRoom <= window, step);
  if (seen.status !== 'running') return { ...idle, ended: seen.ended, stop: 'cancelled' };
  const running = cursor.inFlight.length - seen.ended.length;
  if (running >= window) return { ...idle, ended: seen.ended }; // waited long enough: the workflow asks again
  const { yieldAt } = services.batchLimits;
  const yielding = yieldAt != null && demandOf(await interactiveDemandOrNone(db.manager)) >= yieldAt;
  const room = yielding ? 1 : Math.min(window - running, page);
  const released = new Set(seen.ended.filter((e) => e.released).map((e) => e.position));
  const spent = cursor.spent - cursor.inFlight.filter((item) => released.has(item.position)).reduce((sum, item) => sum + item.price, 0);
  const taken = await acceptPage(services, batch, cursor.after, room, spent, step);
  // Each job's first task to this worker with its start (eager: the step runs in a worker of the batch queue).
  await Promise.all(taken.accepted.map((item) => startJobWorkflow(services.temporal, services.config, {
    jobId: item.job.jobId, type: item.type, actionId: item.job.actionId, accountId: item.accountId, provider: item.job.provider, batchId,
  }, { eager: true })));
  if (yielding && taken.accepted.length > 0) await (step.sleep ?? pause)(YIELDING_PACE_MS);
  return {
    ended: seen.ended, accepted: taken.accepted.map(({ position, price }) => ({ position, price })), lastPosition: taken.lastPosition,
    done: taken.done, ...(taken.stop ? { stop: taken.stop } : {}),
  };
}

/** Waits (a while at most) for the batch's last items to end, once it starts no more; answers those that have. */
export async function awaitBatchItems(services: Pick<BatchRunServices, 'db'>, batchId: string, inFlight: ItemInFlight[], step: StepContext = {}) {
  return { ended: (await waitForEnded(services, batchId, inFlight, (ended) => ended === inFlight.length, step)).ended };
}

/** This batch's share of its account's items in flight: the account's bound split among its running batches. */
async function windowOf(m: EntityManager, batch: BatchRow, limits: BatchLimits): Promise<number> {
  const [{ n }] = await m.query(`SELECT count(*)::int AS n FROM batches WHERE account_id = $1 AND status = 'running'`, [batch.account_id]);
  return Math.max(1, Math.min(limits.itemsInFlight, Math.floor(limits.accountItemsInFlight / Math.max(1, n))));
}

/** An item that has its job already: answered again with the price it holds. */
function acceptedItem(
  services: BatchRunServices, batch: BatchRow, caller: Caller, item: { position: number; type: ItemType; price: number; job_id: string; action_id: number },
): TakenItem {
  return {
    position: item.position, accountId: batch.account_id, price: item.price, type: JOB_TYPE[item.type],
    job: jobInput(services, caller, item.type, item.job_id, item.action_id),
  };
}

function jobInput(services: BatchRunServices, caller: Caller, type: ItemType, jobId: string, actionId: number): JobInput {
  const { config, providers } = services;
  return {
    jobId, actionId, maxAttempts: config.jobMaxAttempts, backoffMs: config.jobRetryBackoffMs,
    provider: routeFor(providers, config.taskQueue, type, caller).route,
  };
}

async function acceptItem(
  services: BatchRunServices, batch: BatchRow, caller: Caller,
  item: { position: number; type: ItemType; request: Record<string, unknown> }, spent: number, attempt: number,
): Promise<{ accepted?: TakenItem; stop?: 'budget' | 'cancelled' }> {
  const jobId = randomUUID();
  try {
    const spec = await submissionOf(services, batch, caller, item).catch(async (err: unknown) => {
      if (err instanceof AppError || err instanceof ValidationFailed || databaseAway(err)) throw err;
      // Not the request's fault, nor the database's (the store or a provider failing, a pinned upload gone): tried
      // again with the step a few times, then the item fails rather than its batch retrying for ever.
      if (attempt < PREPARE_ATTEMPTS) throw err;
      log.error('a batch item could not be prepared', { batchId: batch.id, position: item.position, error: String(err) });
      throw new AppError(500, 'internal_error', 'The item could not be prepared');
    });
    if (batch.max_sparks !== null && spent + spec.price > batch.max_sparks) return { stop: 'budget' };
    let actionId = 0;
    await submitAction(services, {
      ...spec, caller, job: { id: jobId, type: JOB_TYPE[item.type] },
      clientGroupId: (item.request.client_group_id as string | undefined) ?? batch.client_group_id ?? undefined,
      webhookUrl: batch.item_events && batch.webhook_url ? batch.webhook_url : undefined,
      batchItem: { claim: (statement, placed) => claimItemPart(statement, batch.id, item.position, { jobId, actionId: placed.actionId, price: spec.price }) },
      respond: (placed) => {
        actionId = placed.actionId;
        return {};
      },
    });
    return {
      accepted: { position: item.position, accountId: batch.account_id, price: spec.price, type: JOB_TYPE[item.type], job: jobInput(services, caller, item.type, jobId, actionId) },
    };
  } catch (err) {
    if (err instanceof BatchItemNotClaimed) return claimedElsewhere(services, batch, caller, item.position);
    if (err instanceof ValidationFailed) { // a request its single route would have refused with 422
      await closeItem(services.db, batch.id, item.position, 'failed', { code: 'invalid_request', message: err.issues.map((i) => `${i.loc.join('.')} ${i.msg}`).join('; ') });
      return {};
    }
    if (!(err instanceof AppError)) throw err; // the database or the store: the step is tried again
    if (MONEY_CODES.includes(err.code)) return { stop: 'budget' };
    // A request that cannot be served as it is (an image unreadable, a provider not configured): the item fails
    // with the error its single request would have answered, nothing held.
    await closeItem(services.db, batch.id, item.position, 'failed', { code: err.code, message: err.message });
    return {};
  }
}

/**
 * The item was not this step's to claim: the batch was cancelled meanwhile, or another try of this step (one its
 * worker was lost in) claimed it first, whose job is then this item's.
 */
async function claimedElsewhere(services: BatchRunServices, batch: BatchRow, caller: Caller, position: number): Promise<{ accepted?: TakenItem; stop?: 'cancelled' }> {
  const now = await readBatch(services.db.manager, batch.id);
  if (now?.status !== 'running') return { stop: 'cancelled' };
  const [item] = await pendingItems(services.db.manager, batch.id, position - 1, 1);
  if (item?.position === position && item.job_id !== null) {
    return { accepted: acceptedItem(services, batch, caller, item as typeof item & { job_id: string; action_id: number }) };
  }
  return {};
}

/** The item made ready to submit as its v1 request would be (without its caller, job and answer). */
async function submissionOf(
  services: BatchRunServices, batch: BatchRow, caller: Caller, item: { type: ItemType; request: Record<string, unknown> },
): Promise<Pick<NewAction<unknown>, 'type' | 'product' | 'price' | 'params' | 'inputs' | 'placement'>> {
  const kit = generationPreparation(services, { storedImages: true }); // uploads were pinned when the batch was made
  const language = batch.accept_language ?? undefined;
  switch (item.type) {
    case 'photo': {
      const body = item.request as unknown as PhotoOrder & { project_id?: number };
      const { found, price, params, images } = await kit.preparePhoto(body, caller, language);
      return { type: 'generate', product: 'photo', price, params, inputs: images, placement: kit.newCard(body, found, 'api_v2') };
    }
    case 'card': {
      const body = item.request as unknown as CardOrder & { project_id?: number };
      const { found, price, params, images } = await kit.prepareCard(body, caller, language);
      return { type: 'generate', product: 'card', price, params, inputs: images, placement: kit.newCard(body, found, 'api_v2') };
    }
    case 'video': {
      const body = item.request as unknown as VideoOrder & { project_id?: number };
      const { price, params, images } = await kit.prepareVideo(body, caller);
      return { type: 'video', product: 'video', price, params, inputs: images, placement: newVideoCard(body, 'api_v2') };
    }
    case 'edit': {
      const body = item.request as unknown as { action_id: number; instruction: string };
      const source = await editableSource(services, caller, body.action_id);
      const params: EditParams = { source: source.assetPath!, instruction: body.instruction };
      return { type: 'edit', product: 'edit', price: (await readPriceList(services.db)).improvement, params, placement: newVersionOf(source) };
    }
  }
}

/** Ends the batch once its started items have ended; items it did not start are `skipped` (budget) or left cancelled. */
export async function finishBatch({ db }: Pick<BatchRunServices, 'db'>, batchId: string, stop: 'budget' | 'cancelled' | undefined): Promise<BatchStatus> {
  if (stop === 'budget') await closePendingItems(db, batchId, 'skipped');
  return finishBatchRecord(db, batchId, stop === 'budget');
}
