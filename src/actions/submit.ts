/**
 * The shared tail of every v1 generation and edit: claim the idempotency key, place the action (a new card, or a
 * new version of an existing card), hold its price, all in one transaction; after commit, start its workflow.
 */
import { actionsTotal, jobsTotal } from '../metrics/registry';
import type { EntityManager } from 'typeorm';
import type { ActionProduct, ActionType } from '../db/entities/action';
import { requireProvider } from '../providers';
import { abandonStart, confirmStart, insertAction, insertCard } from './lifecycle';
import { holdSparks, InsufficientSparks, readBalance, transactionWithHolds } from '../billing/sparks';
import { log } from '../log';
import { ProviderRoute, providerTaskQueue } from '../temporal/contract';
import { startActionWorkflow, startJobWorkflow } from '../temporal/starts';
import { insertJob, type JobType } from '../jobs/lifecycle';
import { generationUnavailable, insufficientTokens } from '../errors';
import { CheckedImage, storeInputs } from '../generation/images';
import { ProjectHints, resolveProject } from '../projects/grouping';
import {
  awaitStartSettled, claimKey, IdempotencyClaim, IdempotentReplay, keyInFlight, recordResponse, StoredResponse,
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

async function place(m: EntityManager, caller: Caller, placement: Placement) {
  if (placement.kind === 'new-version') return { ...placement, parentActionId: placement.parentActionId as number | null };
  const projectId = await resolveProject(m, caller, placement.projectId, placement.hints, placement.ownProject);
  const cardId = await insertCard(m, { accountId: caller.accountId, projectId, contentType: placement.contentType, aspectRatio: placement.aspectRatio });
  return { projectId, cardId, parentActionId: null, depth: 0 };
}

/** The provider that serves this product, and where its calls run. */
function routeFor({ providers, config }: Pick<Services, 'providers' | 'config'>, product: ActionProduct): { name: string; route: ProviderRoute } {
  if (product === 'video') {
    const { name, pollIntervalSeconds } = providers.video;
    return { name, route: { taskQueue: providerTaskQueue(config.taskQueue, name), pollSeconds: pollIntervalSeconds } };
  }
  return { name: providers.image.name, route: { taskQueue: providerTaskQueue(config.taskQueue, providers.image.name) } };
}

async function placeAndStart<R>(services: Services, spec: NewAction<R>): Promise<StoredResponse> {
  const { db, temporal, config } = services;
  // Plainly unpaid: 402 without a write (and without the failed commit that would otherwise refuse it). The balance
  // read with the key may be stale by now (images fetched, a wait for an earlier request with the same key), so a
  // refusal is confirmed with a fresh read.
  if (spec.price > spec.caller.availableOnArrival) {
    const { available } = await readBalance(db, spec.caller.accountId);
    if (spec.price > available) throw insufficientTokens(available, spec.price);
  }
  const provider = routeFor(services, spec.product);
  const { placed, response } = await transactionWithHolds(db, spec.caller.accountId, spec.price, async (m) => {
    if (spec.idempotency) await claimKey(m, spec.idempotency);
    const where = await place(m, spec.caller, spec.placement);
    const actionId = await insertAction(m, {
      accountId: spec.caller.accountId, projectId: where.projectId, cardId: where.cardId, type: spec.type, product: spec.product,
      depth: where.depth, parentActionId: where.parentActionId, price: spec.price, params: spec.params,
      clientGroupId: spec.clientGroupId ?? null, webhookUrl: spec.webhookUrl ?? null, provider: provider.name,
    });
    await holdSparks(m, spec.caller.accountId, actionId, spec.price); // reserved as this transaction commits
    if (spec.job) {
      await insertJob(m, { id: spec.job.id, accountId: spec.caller.accountId, actionId, type: spec.job.type, provider: provider.name });
    }
    const placed: PlacedAction = { actionId, projectId: where.projectId, cardId: where.cardId };
    if (spec.alsoRecord) await spec.alsoRecord(m, placed);
    const response: StoredResponse = { status: spec.status ?? 200, body: spec.respond(placed) };
    if (spec.idempotency) await recordResponse(m, spec.idempotency, response, placed.actionId);
    return { placed, response };
  }).catch((err) => {
    if (err instanceof InsufficientSparks) throw insufficientTokens(err.available, err.required);
    throw err;
  });

  // Committed as `starting`: the action is accepted only once its workflow has started and that is confirmed.
  // Until then a repeat of its Idempotency-Key waits, and the reconciler abandons a start that never happened.
  try {
    await storeInputs(services, spec.inputs ?? []); // only now, so a refused request leaves nothing stored
    if (spec.job) {
      await startJobWorkflow(temporal, config, {
        jobId: spec.job.id, type: spec.job.type, actionId: placed.actionId, accountId: spec.caller.accountId, provider: provider.route,
      });
    } else {
      await startActionWorkflow(temporal, config.taskQueue, {
        id: placed.actionId, accountId: spec.caller.accountId, type: spec.type, product: spec.product, provider: provider.route,
      });
    }
  } catch (err) {
    log.error('could not store the inputs or start the workflow', { actionId: placed.actionId, error: (err as Error).message });
    // Temporal is unreachable: release and fail it now. If even that fails, it stays `starting` and the
    // reconciler abandons it: either way it never runs and nothing is charged, as the 503 says.
    await db.transaction((m) => abandonStart(m, placed.actionId))
      .catch((compensation) => log.error('could not release the hold of an unstarted action; the reconciler will', {
        actionId: placed.actionId, error: String(compensation),
      }));
    throw generationUnavailable();
  }
  // The workflow runs: unless the reconciler abandoned the start meanwhile, the answer is the stored one. If the
  // confirmation itself fails (the database is away), the reconciler confirms it later: still the stored answer.
  const confirmed = await confirmStart(db.manager, placed.actionId).catch((err) => {
    log.warn('could not confirm a started workflow; the reconciler will', { actionId: placed.actionId, error: String(err) });
    return true;
  });
  if (!confirmed) throw generationUnavailable();
  actionsTotal.inc({ product: spec.product, provider: provider.name, outcome: 'accepted' });
  if (spec.job) jobsTotal.inc({ type: spec.job.type, outcome: 'accepted' });
  return response;
}

/** Answers the response body, or the first response (marked replayed) when the idempotency key was used. */
export async function submitAction<R>(services: Services, spec: NewAction<R>): Promise<StoredResponse & { replayed?: boolean }> {
  requireProvider(services, spec.product === 'video' ? 'video' : 'image');
  if (spec.webhookUrl) await checkWebhookUrl(services.outbound, spec.webhookUrl, 'webhook_url');
  for (let round = 0; ; round++) {
    try {
      return await placeAndStart(services, spec);
    } catch (err) {
      if (!(err instanceof IdempotentReplay)) throw err;
      if (!err.inFlight) return { ...err.response, replayed: true };
      // The first request with this key committed but has not started its workflow yet: wait for it to settle,
      // then answer as it ended (its stored answer, or a fresh try when it was abandoned).
      if (round >= 2 || !(await awaitStartSettled(services.db, spec.idempotency!))) throw keyInFlight();
    }
  }
}


/** A new version of the card of `source`, one level deeper. */
export function newVersionOf(source: { id: number; projectId: number; cardId: number; depth: number }): Placement {
  return { kind: 'new-version', projectId: source.projectId, cardId: source.cardId, parentActionId: source.id, depth: source.depth + 1 };
}
