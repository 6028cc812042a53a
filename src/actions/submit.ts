/**
 * The shared tail of every v1 generation and edit, v2 job and funnel card: claim the idempotency key, place the
 * action (a new card, or a new version of an existing card), hold its price, all in one statement; after its
 * commit, start the workflow.
 */
import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { actionsTotal, jobsTotal } from '../metrics/registry';
import type { ActionProduct, ActionType } from '../db/entities/action';
import { idBlocks } from '../db/id-blocks';
import { prepared, preparedRows } from '../db/prepared';
import { CompoundStatement } from '../db/statement';
import { requireProvider } from '../providers';
import { abandonStart, actionPart, cardPart, type CardChoice, confirmStart, startStateOf } from './lifecycle';
import { countHeld, holdPart, InsufficientSparks, readBalance, refusingUncoveredHolds } from '../billing/sparks';
import { log } from '../log';
import { ProviderRoute, providerTaskQueue } from '../temporal/contract';
import { startActionWorkflow, startJobWorkflow } from '../temporal/starts';
import { jobPart, type JobType } from '../jobs/lifecycle';
import { generationUnavailable, insufficientTokens } from '../errors';
import { CheckedImage, storeInputs } from '../generation/images';
import { chooseProject, projectPart, type ProjectChoice, type ProjectHints } from '../projects/grouping';
import {
  awaitStartSettled, claimPart, IdempotencyClaim, IdempotentReplay, keyInFlight, refusedClaim, StoredResponse,
} from '../idempotency/keys';
import type { Services, Caller } from '../services';
import { checkWebhookUrl } from '../webhooks/urls';

/** Where the action goes: a new card (grouped by project_id or the key's default), or a new version of a card. */
export type Placement =
  | { kind: 'new-card'; projectId?: number; hints: ProjectHints; aspectRatio: string; contentType: 'photo' | 'video'; ownProject?: 'api_v2' }
  | { kind: 'new-version'; projectId: number; cardId: number; parentActionId: number; depth: number };

export interface NewAction<R> {
  caller: Caller;
  type: ActionType;
  product: ActionProduct;
  price: number;
  placement: Placement;
  params: object;
  clientGroupId?: string;
  webhookUrl?: string;
  idempotency?: IdempotencyClaim;
  /** Images named in `params` that are not stored yet: stored after the commit, before the workflow starts. */
  inputs?: CheckedImage[];
  /** Set for a v2 job: its row is written in the same transaction and the job workflow runs the action. */
  job?: { id: string; type: JobType };
  /**
   * Set for a batch's item, accepted by its batch's step: the statement claims the item's row (`claim`: the
   * statement's `claimed` part, no row when the item is not the step's to take: BatchItemNotClaimed) instead of an
   * Idempotency-Key; its inputs are stored before the statement (a retried step answers a claimed item again without
   * coming back here), and the step starts its workflow, trying again until it has: nothing is started here.
   */
  batchItem?: { claim(statement: CompoundStatement, placed: PlacedAction): string };
  /** The success status (200 for v1, 202 for v2 jobs), stored with the response so repeats get it too. */
  status?: number;
  /** The response body for the placed action (stored with the idempotency key, so repeats get the same). */
  respond(placed: PlacedAction): R;
  /**
   * Runs in the transaction that holds the price, after the hold: a write that must happen exactly when the action
   * is accepted (a funnel's conditional claim of its card). Throwing rolls everything back, hold included.
   */
  alsoRecord?(m: EntityManager, placed: PlacedAction): Promise<void>;
}

export interface PlacedAction { actionId: number; projectId: number; cardId: number }

/** A batch's item that its step's statement did not claim: the batch stopped meanwhile, or another try took it. */
export class BatchItemNotClaimed extends Error {}

/**
 * What an accept needs of the process: the API's services, or a worker's (a batch's item is accepted by its
 * workflow's activity, which starts its job itself: `batchItem`).
 */
export type SubmitServices = Pick<Services, 'db' | 'providers' | 'outbound' | 'store'> & Partial<Pick<Services, 'temporal'>>
  & { config: Pick<Services['config'], 'taskQueue' | 'jobMaxAttempts' | 'jobRetryBackoffMs'> };

/**
 * The provider that serves this product, and where its calls run (a test's stack routes its starts alike); a test
 * key's work is the sandbox renderer's.
 */
export function routeFor(
  providers: Services['providers'], taskQueue: string, product: ActionProduct, caller: { sandbox?: object } = {},
): { name: string; route: ProviderRoute } {
  const chosen = caller.sandbox ? { image: providers.sandbox, video: providers.sandbox } : providers;
  if (product === 'video') {
    const { name, pollIntervalSeconds } = chosen.video;
    return { name, route: { taskQueue: providerTaskQueue(taskQueue, name), pollSeconds: pollIntervalSeconds } };
  }
  const { name, inProcess } = chosen.image;
  return { name, route: { taskQueue: providerTaskQueue(taskQueue, name), ...(inProcess ? { inline: true as const } : {}) } };
}

/** The accept statement's card, project and ids, taken before it (ids from their sequences, ahead). */
async function choosePlace(services: SubmitServices, spec: NewAction<unknown>) {
  const { db } = services;
  const ids = idBlocks(db);
  const placement = spec.placement;
  if (placement.kind === 'new-version') {
    return {
      project: { kind: 'existing', id: placement.projectId } as ProjectChoice, card: { kind: 'existing', id: placement.cardId } as CardChoice,
      parentActionId: placement.parentActionId as number | null, depth: placement.depth, actionId: await ids.next('actions'),
    };
  }
  const [project, cardId, actionId] = await Promise.all([
    chooseProject(db, spec.caller, placement.projectId, placement.hints, placement.ownProject), ids.next('cards'), ids.next('actions'),
  ]);
  const card: CardChoice = { kind: 'new', id: cardId, contentType: placement.contentType, aspectRatio: placement.aspectRatio };
  return { project, card, parentActionId: null, depth: 0, actionId };
}

/**
 * Accepts the action in one statement, its own transaction (src/db/statement.ts): the Idempotency-Key claimed with
 * the answer, the project (when new), the card (when new), the action as `starting`, its hold, its v2 job. A live
 * claim of the key makes it write nothing (IdempotentReplay). Then, after the commit, it stores the images and
 * starts the workflow. A route that records more with the accept (`alsoRecord`) runs the statement in a transaction
 * of its own with that.
 */
async function placeAndStart<R>(services: SubmitServices, spec: NewAction<R>): Promise<StoredResponse> {
  const { db, temporal, config } = services;
  // Plainly unpaid: 402 without a write (and without the failed commit that would otherwise refuse it). The balance
  // read with the key may be stale by now (images fetched, a wait for an earlier request with the same key), so a
  // refusal is confirmed with a fresh read.
  if (spec.price > spec.caller.availableOnArrival) {
    const { available } = await readBalance(db, spec.caller.accountId);
    if (spec.price > available) throw insufficientTokens(available, spec.price);
  }
  const provider = routeFor(services.providers, config.taskQueue, spec.product, spec.caller);
  const where = await choosePlace(services, spec);
  const placed: PlacedAction = { actionId: where.actionId, projectId: where.project.id, cardId: where.card.id };
  const response: StoredResponse = { status: spec.status ?? 200, body: spec.respond(placed) };
  const accountId = spec.caller.accountId;

  // A batch's item is answered again by a retried accept step without coming back here: its inputs are stored
  // before it is accepted (a refused one leaves files that the purge of inputs removes).
  if (spec.batchItem) await storeInputs(services, spec.inputs ?? []);
  const parts = new CompoundStatement();
  parts.with('claimed', spec.batchItem ? spec.batchItem.claim(parts, placed) : claimPart(parts, spec.idempotency, response, placed.actionId));
  parts.with('project', projectPart(parts, spec.caller, where.project));
  parts.with('card', cardPart(parts, accountId, where.card));
  parts.with('action', actionPart(parts, {
    id: placed.actionId, accountId, type: spec.type, product: spec.product, depth: where.depth, parentActionId: where.parentActionId,
    price: spec.price, params: withDrill(spec.params, spec.caller), clientGroupId: spec.clientGroupId ?? null, webhookUrl: spec.webhookUrl ?? null, provider: provider.name,
  }));
  parts.with('hold', holdPart(parts, accountId, spec.caller.keyId, spec.price));
  if (spec.job) parts.with('job', jobPart(parts, { id: spec.job.id, accountId, type: spec.job.type, provider: provider.name }));
  const text = parts.text('SELECT id FROM action');
  const accepted = await refusingUncoveredHolds(db, accountId, spec.price, async () => {
    if (!spec.alsoRecord) return (await preparedRows(db, prepared(`accept_${shapeOf(text)}`, text), parts.values)).length > 0;
    return db.transaction(async (m) => {
      const rows: unknown[] = await m.query(text, parts.values);
      if (rows.length > 0) await spec.alsoRecord!(m, placed);
      return rows.length > 0;
    });
  }).catch((err) => {
    if (err instanceof InsufficientSparks) throw insufficientTokens(err.available, err.required);
    throw err;
  });
  if (!accepted) throw spec.batchItem ? new BatchItemNotClaimed() : await refusedClaim(db, spec.idempotency!);
  countHeld(spec.product, spec.price);
  const committedAt = Date.now();

  // Committed as `starting`: its workflow's first step records it `started`. Until then a repeat of its
  // Idempotency-Key asks Temporal whether the workflow exists, and the reconciler abandons a start that never happened.
  try {
    if (!spec.batchItem) await storeInputs(services, spec.inputs ?? []); // only now, so a refused request leaves nothing stored
    if (spec.batchItem) {
      // Its batch's step starts it, with the job's id.
    } else if (!temporal) {
      throw new Error('a workflow start needs the Temporal client');
    } else if (spec.job) {
      await startJobWorkflow(temporal, config, {
        jobId: spec.job.id, type: spec.job.type, actionId: placed.actionId, accountId, provider: provider.route,
      });
    } else {
      await startActionWorkflow(temporal, config.taskQueue, {
        id: placed.actionId, accountId, type: spec.type, product: spec.product, provider: provider.route,
      });
    }
  } catch (err) {
    log.error('could not store the inputs or start the workflow', { actionId: placed.actionId, error: (err as Error).message });
    // Temporal is unreachable: release and fail it now. If even that fails, it stays `starting` and the
    // reconciler abandons it: either way it never runs and nothing is charged, as the 503 says.
    const abandoned = await db.transaction((m) => abandonStart(m, placed.actionId)).catch((compensation) => {
      log.error('could not release the hold of an unstarted action; the reconciler will', { actionId: placed.actionId, error: String(compensation) });
      return true; // it never counts as accepted: the reconciler abandons or, if its workflow does exist, records it
    });
    // Not abandoned: the start did reach Temporal (its answer was lost) and the workflow has recorded itself: it runs
    // and will be charged, so the answer is the accepted one, not a 503.
    if (abandoned || (await startStateOf(db.manager, placed.actionId)) !== 'started') throw generationUnavailable();
    log.warn('the workflow start answered an error, but the workflow runs: the action is accepted', { actionId: placed.actionId });
  }
  // A start that took long enough for the reconciler to have abandoned it meanwhile (it waits START_GRACE_SECONDS)
  // is confirmed before it is answered: the answer must match what happens to the action.
  if (!spec.batchItem && Date.now() - committedAt > SLOW_START_MS && !(await confirmStart(db.manager, placed.actionId))) throw generationUnavailable();
  actionsTotal.inc({ product: spec.product, provider: provider.name, outcome: 'accepted' });
  if (spec.job) jobsTotal.inc({ type: spec.job.type, outcome: 'accepted' });
  return response;
}

/** A start slower than this (from the commit) is confirmed before it is answered: well under the reconciler's 30 s grace for starts. */
const SLOW_START_MS = 10_000;

/** The action's params, with the sandbox drill its request asked for (read by the sandbox renderer and the webhook delivery). */
const withDrill = (params: object, caller: Caller): object =>
  (caller.sandbox?.scenario ? { ...params, sandbox_scenario: caller.sandbox.scenario } : params);

/** A short name for an accept statement's shape (a prepared statement per shape: claim or not, new or existing rows, job or not). */
const shapeOf = (text: string): string => createHash('sha1').update(text).digest('hex').slice(0, 12);

/** Answers the response body, or the first response (marked replayed) when the idempotency key was used. */
export async function submitAction<R>(services: SubmitServices, spec: NewAction<R>): Promise<StoredResponse & { replayed?: boolean }> {
  requireProvider(services, spec.product === 'video' ? 'video' : 'image', spec.caller);
  // A batch's item names its batch's URL, checked when the batch was made (and at each send, as every delivery is).
  if (spec.webhookUrl && !spec.batchItem) await checkWebhookUrl(services.outbound, spec.webhookUrl, 'webhook_url');
  for (let round = 0; ; round++) {
    try {
      return await placeAndStart(services, spec);
    } catch (err) {
      if (!(err instanceof IdempotentReplay)) throw err;
      if (!err.inFlight) return { ...err.response, replayed: true };
      // The first request with this key committed but has not started its workflow yet: wait for it to settle,
      // then answer as it ended (its stored answer, or a fresh try when it was abandoned).
      if (round >= 2 || !services.temporal || !(await awaitStartSettled({ db: services.db, temporal: services.temporal }, spec.idempotency!))) throw keyInFlight();
    }
  }
}


/** A new version of the card of `source`, one level deeper. */
export function newVersionOf(source: { id: number; projectId: number; cardId: number; depth: number }): Placement {
  return { kind: 'new-version', projectId: source.projectId, cardId: source.cardId, parentActionId: source.id, depth: source.depth + 1 };
}
