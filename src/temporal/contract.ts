/**
 * What the API, the worker and the workflows agree on: the workflows' signatures, workflow ids, search attribute
 * keys, updates, task queues, timeout presets and failure types. Pure constants and types only: workflows import
 * this module too (the lint's allowed list).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineUpdate } from '@temporalio/workflow';
import type { ActionEnd } from '../actions/lifecycle';
import type { FunnelIdea, FunnelSetup } from '../funnels/session';
import type { PurgedRecords } from '../housekeeping/retention';
import type { BatchStatus } from '../batches/store';

export const SEARCH_ATTRIBUTES = {
  accountId: defineSearchAttributeKey('AccountId', SearchAttributeType.INT),
  actionId: defineSearchAttributeKey('ActionId', SearchAttributeType.INT),
  actionType: defineSearchAttributeKey('ActionType', SearchAttributeType.KEYWORD),
  actionStatus: defineSearchAttributeKey('ActionStatus', SearchAttributeType.KEYWORD),
  jobId: defineSearchAttributeKey('JobId', SearchAttributeType.KEYWORD),
  jobStatus: defineSearchAttributeKey('JobStatus', SearchAttributeType.KEYWORD),
  jobPhase: defineSearchAttributeKey('JobPhase', SearchAttributeType.KEYWORD),
  webhookEvent: defineSearchAttributeKey('WebhookEvent', SearchAttributeType.KEYWORD),
  funnelId: defineSearchAttributeKey('FunnelId', SearchAttributeType.INT),
} as const;

/** The `--search-attribute` registrations the dev server needs (Temporal's own type names). */
export const SEARCH_ATTRIBUTE_REGISTRATIONS: Record<string, 'Int' | 'Keyword'> = Object.fromEntries(
  Object.values(SEARCH_ATTRIBUTES).map((key) => [key.name, key.type === SearchAttributeType.INT ? 'Int' : 'Keyword']),
);

export const actionWorkflowId = (actionId: number): string => `action-${actionId}`;
export const jobWorkflowId = (jobId: string): string => `job-${jobId}`;
export const funnelWorkflowId = (funnelId: number): string => `funnel-${funnelId}`;
export const batchWorkflowId = (batchId: string): string => `batch-${batchId}`;

/**
 * A batch's tasks wait behind interactive ones (priority 3, the default; 1 runs first) and share the queue fairly
 * between accounts (one fairness key per account): the batch's workflow and each item's job are started with it.
 * The servers honour them with `matching.enableFairness` (the dev server's start and the cluster's dynamic config).
 */
export const batchPriority = (accountId: number) => ({ priorityKey: 4, fairnessKey: `account-${accountId}` });

/**
 * `imagery-batch`: the task queue of batches and their items' jobs, next to the main one, so that the workers that
 * serve it can be others than those of interactive work (on other machines, or at a lower CPU priority on a shared
 * one: docs/operations.md). A worker process serves it unless `WORKER_QUEUES` leaves it out.
 */
export const batchTaskQueue = (taskQueue: string): string => `${taskQueue}-batch`;

/**
 * The steps of a funnel session after its start, each a Temporal update of `funnel-<id>` (named for the Web UI).
 * Their validators refuse a step out of order before it enters history (ApplicationFailure types are the API's
 * `error` codes, `FUNNEL_REFUSALS`).
 */
export const FUNNEL_UPDATES = {
  /** Step 2: one more idea into the pool; answers the idea. */
  addIdea: defineUpdate<FunnelIdea, []>('addIdea'),
  /** Step 3: the setup (references already stored); answers nothing. */
  applySetup: defineUpdate<void, [FunnelSetup]>('applySetup'),
  /** Step 4: the card's action was placed and held by the API; the session closes its ideas and setup. */
  recordCard: defineUpdate<void, [{ actionId: number }]>('recordCard'),
};
/** A delivery's workflow id is its UUID, the `X-Service-Job-Id` receivers see. */
export const deliveryWorkflowId = (deliveryId: string): string => `delivery-${deliveryId}`;
/** The announcement of an outcome decided outside the action's workflow (by the reconciler). */
export const announcementWorkflowId = (actionId: number, outcome: 'completed' | 'failed'): string => `announce-${outcome}-${actionId}`;

/**
 * Where an action's provider calls run, decided when the action is accepted. Workflows started before provider
 * routing have none and call the provider on the main task queue.
 */
export interface ProviderRoute {
  /** The provider's own task queue (`providerTaskQueue`), served by workers that cap its concurrency and rate. */
  taskQueue: string;
  /** Set for videos: the render is advanced one short activity at a time, with this many seconds of timer between. */
  pollSeconds?: number;
  /**
   * Set for images of a provider that renders in the worker's own process (the local renderer): the render is a
   * local activity of the workflow's worker, in the same workflow task as the steps around it, with no task queue
   * to wait on (workflows since the `inline-render` patch; `taskQueue` is still where older code would send it).
   */
  inline?: true;
}

/** `imagery-provider-gemini`: one task queue per provider, next to the main one, shared by every worker process. */
export const providerTaskQueue = (taskQueue: string, providerName: string): string => `${taskQueue}-provider-${providerName}`;

/** A provider activity that has not heartbeated for this long has lost its worker. */
export const PROVIDER_HEARTBEAT_TIMEOUT_SECONDS = 10;

/** Activity option presets, named by the kind of work. */
export const TIMEOUTS = {
  /** Short database transactions: read-model moves, holds, charges. */
  bookkeeping: { startToCloseTimeout: '30 seconds' },
  /** Bookkeeping retries until the database answers again (every 30 s at most: a local activity retries in its worker). */
  bookkeepingRetry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  /** A provider call: long, heartbeating so that a dead worker is noticed in seconds, not minutes. */
  provider: { startToCloseTimeout: '10 minutes', heartbeatTimeout: `${PROVIDER_HEARTBEAT_TIMEOUT_SECONDS} seconds` },
  /**
   * How long a provider call may wait for a worker of its provider's queue (none serves it, e.g. after the provider
   * was switched): then it fails and the hold is released, rather than staying open while nothing can run it.
   */
  providerQueue: { scheduleToStartTimeout: '30 minutes' },
  /** An in-process render (a local activity, `ProviderRoute.inline`): its worker renders it or the workflow task times out. */
  inlineRender: { startToCloseTimeout: '10 minutes' },
  /** The longest a video may take at its provider, checks included; then its task is stopped and the action fails. */
  videoRenderMs: 60 * 60_000,
  /** One webhook POST: the receiver has 10 s; the rest is margin for connecting. */
  delivery: { startToCloseTimeout: '15 seconds' },
  /** Accepting a page of a batch's items: each may fetch its images and ask the text provider to analyse them. */
  batchAccept: { startToCloseTimeout: '10 minutes', heartbeatTimeout: '2 minutes' },
} as const;

/** ApplicationFailure types raised by activities; the permanent ones are never retried. */
export const FAILURE_TYPES = {
  providerRefused: 'ProviderRefused',
  providerUnavailable: 'ProviderUnavailable',
  invalidInput: 'InvalidInput',
  webhookRefused: 'WebhookRefused',
  webhookUnreachable: 'WebhookUnreachable',
  /** A v2 job's render found its job already ended (cancelled meanwhile): the attempt stops, nothing is stored. */
  jobEnded: 'JobEnded',
  /** An in-process render found every place taken (`ImageProvider.reserveInProcess`): it goes to the provider's queue. */
  rendererBusy: 'RendererBusy',
} as const;
export const NON_RETRYABLE_FAILURE_TYPES = [FAILURE_TYPES.providerRefused, FAILURE_TYPES.invalidInput];
/**
 * The failures whose message an integrator may read as `error_message`: the provider adapters' own words. Any other
 * failure (a database or storage error, a bug) may carry internal paths or addresses: it is logged, not shown.
 */
export const SHOWN_FAILURE_TYPES: readonly string[] = [FAILURE_TYPES.providerRefused, FAILURE_TYPES.providerUnavailable, FAILURE_TYPES.invalidInput];

// The workflows: what each is started with and answers. `workflows/index.ts` proves at compile time that every one
// is implemented with this signature, and every start (`src/temporal/starts.ts`) is typed by it, so a renamed
// workflow or a changed argument fails to build on both sides.

export interface ActionWorkflowInput {
  actionId: number;
  /** The provider's task queue (absent in workflows started before provider routing). */
  provider?: ProviderRoute;
}

export type ActionOutcome = ActionEnd;

export interface JobInput {
  jobId: string;
  actionId: number;
  maxAttempts: number;
  /** First backoff between attempts; doubles after each. */
  backoffMs: number;
  /** The provider's task queue (absent in workflows started before provider routing). */
  provider?: ProviderRoute;
}

export type JobOutcome = { status: 'succeeded'; assetPath: string } | { status: 'failed' | 'dead_letter'; error: string } | { status: 'cancelled' };

export interface FunnelState {
  ideas: number;
  generated: boolean;
}

export interface FunnelWorkflowInput {
  funnelId: number;
  idleTimeoutSeconds: number;
  /** Carried over continue-as-new. */
  state?: FunnelState;
  /** Steps before continuing as new (STEPS_PER_RUN unless set: tests use a small number). */
  stepsPerRun?: number;
}

export type FunnelOutcome = { status: 'expired'; ideas: number; generated: boolean };

export interface DeliveryInput {
  deliveryId: string;
  maxAttempts: number;
  retryInitialMs: number;
}

export type DeliveryOutcome = { status: 'delivered' | 'skipped' } | { status: 'failed'; error: string };

export interface AnnouncementInput {
  actionId: number;
  outcome: 'completed' | 'failed';
}

/** What a batch's run carries into the next (continue-as-new): where it is, and what its items hold or were charged. */
export interface BatchCursor {
  /** Every item up to this position is started or closed. */
  after: number;
  spent: number;
  /** The items started and not seen ended yet (runs since the `accept-starts-items` patch: they are not children). */
  inFlight?: ItemInFlight[];
}

/** An item whose job the batch started: what its end gives back to the budget when its hold is released. */
export interface ItemInFlight { position: number; price: number }

/**
 * A step of a batch since `accept-starts-items`: the items of `inFlight` seen ended meanwhile (`released`: their hold
 * was given back), those it accepted and started, and where it stopped.
 */
export interface BatchStep {
  ended: { position: number; released: boolean }[];
  accepted: ItemInFlight[];
  /** Every item up to this position is accepted or closed. */
  lastPosition: number;
  /** Why the batch starts nothing more: the next item would pass the budget (or the balance), or it was cancelled. */
  stop?: 'budget' | 'cancelled';
  /** No item is left to start after `lastPosition`. */
  done: boolean;
}

export interface BatchInput {
  batchId: string;
  /** Set in runs after the first (continue-as-new). */
  cursor?: BatchCursor;
  /** Items a run starts before it continues as new, besides Temporal's suggestion (tests set a small number). */
  itemsPerRun?: number;
}

export type BatchOutcome = { status: BatchStatus };

/** A batch item its workflow accepted (its price held): the job to start as its child (runs before `accept-starts-items`). */
export interface AcceptedItem { position: number; accountId: number; price: number; job: JobInput }

/** `sandboxesToppedUp`: in runs since the `sandbox-top-up` patch. */
export type HousekeepingReport = PurgedRecords & { uploads: number; inputs: number; sandboxesToppedUp?: number };

/** Every workflow type by its name, with the signature its starts and its implementation share. */
export interface WorkflowContract {
  actionWorkflow: (input: ActionWorkflowInput) => Promise<ActionOutcome>;
  jobWorkflow: (input: JobInput) => Promise<JobOutcome>;
  funnelWorkflow: (input: FunnelWorkflowInput) => Promise<FunnelOutcome>;
  webhookDeliveryWorkflow: (input: DeliveryInput) => Promise<DeliveryOutcome>;
  announcementWorkflow: (input: AnnouncementInput) => Promise<void>;
  housekeepingWorkflow: () => Promise<HousekeepingReport>;
  batchWorkflow: (input: BatchInput) => Promise<BatchOutcome>;
}
export type WorkflowType = keyof WorkflowContract;
