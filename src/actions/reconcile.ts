/**
 * The reconciler: the read models against the workflows that own them, run by every worker process at start and
 * every minute, one pass at a time in the deployment (`reconcileExclusively`: the others skip that minute). Safe to
 * run anywhere, any number of times: every move it makes is conditional.
 *
 * - Starts in flight: an action is committed `starting`, then its workflow is started, then the API confirms. An
 *   API that died in between, or could not compensate a failed start, leaves it `starting`. Past a short grace,
 *   one whose workflow exists is confirmed; one whose workflow does not is abandoned (released, failed, its
 *   Idempotency-Key forgotten): the client never got a 200 for it, so it never runs.
 * - Lost workflows: an open action (or live v2 job) whose workflow was terminated or reset away by an operator,
 *   or is gone, past the grace period: the hold is released and the action (and job) failed in one transaction,
 *   the failure event is sent, and it is logged.
 * - Unannounced outcomes: a completed or failed action whose workflow ended without sending its event (see
 *   announceUnannouncedOutcomes) gets it sent.
 * - Lost deliveries: a pending webhook delivery whose workflow an operator terminated is closed as failed (the
 *   integrator may redeliver it); one whose workflow never started is started (see settleLostDeliveries).
 */
import { Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import type { DataSource } from 'typeorm';
import { ADVISORY_LOCKS, CONNECTION_SETTINGS, databaseUrlOf } from '../db/data-source';
import { abandonStart, confirmStart, OPEN_ACTION_STATUSES, releaseAndClose } from './lifecycle';
import { sqlRows } from '../db/sql';
import { EVENTS_BY_TYPE_JSON } from '../webhooks/events';
import { log } from '../log';
import { actionWorkflowId, batchWorkflowId, deliveryWorkflowId, jobWorkflowId } from '../temporal/contract';
import { startAnnouncement, startBatchWorkflow, startDeliveryWorkflow } from '../temporal/starts';
import { cancelBatchRecord, staleLiveBatches } from '../batches/store';
import { finishJobAsItsAction } from '../jobs/lifecycle';
import { closeStoppedDelivery, type PendingDelivery, stalePendingDeliveries } from '../webhooks/store';
import { lostWorkflowMessage, workflowState } from '../temporal/workflow-state';

export interface ReconcileConfig {
  taskQueue: string;
  /** How old an open action must be before a closed or missing workflow makes it lost. */
  graceSeconds: number;
  /** How long a start may stay in flight before the reconciler settles it. */
  startGraceSeconds?: number;
  /** The first retry interval of a delivery the reconciler starts. */
  webhookRetryInitialMs: number;
}

interface Owned { action_id: number; status: string; job_id: string | null; job_status: string | null }
const ownedIds = (row: Owned) => ({ actionId: row.action_id, jobId: row.job_id });

const ownerOf = (row: Owned): string => (row.job_id ? jobWorkflowId(row.job_id) : actionWorkflowId(row.action_id));

/**
 * Starts left in flight (`starting`: the workflow's first step has not recorded it): one whose workflow exists is
 * recorded as started once older than `confirmAfterSeconds` (then its workflow is looked after as any other's); one
 * whose workflow does not exist is abandoned once older than `abandonAfterSeconds` (the API between its commit and
 * its start must not be raced). Answers how many were abandoned.
 */
export async function settleStarts(db: DataSource, client: Client, abandonAfterSeconds: number, confirmAfterSeconds = abandonAfterSeconds): Promise<number> {
  // In pages by action id, as the lost workflows are (reconcileLostWorkflows).
  return (await inPages((afterId: number) => sqlRows<Owned & { abandonable: boolean; running_batch: string | null }>(db.manager,
    `SELECT a.id AS action_id, a.status, j.id AS job_id, j.status AS job_status,
            a.created_at < now() - make_interval(secs => $1) AS abandonable,
            (SELECT b.id FROM batch_items i JOIN batches b ON b.id = i.batch_id WHERE i.action_id = a.id AND b.status = 'running') AS running_batch
       FROM actions a LEFT JOIN jobs j ON j.action_id = a.id
      WHERE a.start_state = 'starting' AND a.created_at < now() - make_interval(secs => least($1, $2)) AND a.id > $3
      ORDER BY a.id LIMIT ${PAGE_ROWS}`, [abandonAfterSeconds, confirmAfterSeconds, afterId]),
  (row) => row.action_id, 0, (rows) => countMoved(rows, 'settling a start', ownedIds, async (row) => {
    const started = row.status !== 'pending' || (await workflowState(client, ownerOf(row))).kind !== 'missing';
    if (started) {
      await confirmStart(db.manager, row.action_id);
      return false;
    }
    if (!row.abandonable) return false;
    // A running batch's item: its batch's workflow starts its job (after a lost worker, a while later), as long as
    // that workflow runs (one an operator ended is settled by reconcileLostBatches, then its items here).
    if (row.running_batch && (await workflowState(client, batchWorkflowId(row.running_batch))).kind === 'running') return false;
    if (!(await db.transaction((m) => abandonStart(m, row.action_id)))) return false;
    log.warn('abandoned an action whose workflow never started; its hold was released', { actionId: row.action_id, jobId: row.job_id });
    return true;
  }))).moved;
}

/** Fails open actions and live jobs whose workflow is closed or missing; answers how many it moved. */
export async function reconcileLostWorkflows(db: DataSource, client: Client, config: ReconcileConfig): Promise<number> {
  // In pages by action id: the open actions whose workflows still run (a backlog, long videos) must not hide the rest.
  return (await inPages((afterId: number) => sqlRows<Owned>(db.manager,
    `SELECT a.id AS action_id, a.status, j.id AS job_id, j.status AS job_status
       FROM actions a LEFT JOIN jobs j ON j.action_id = a.id
      WHERE a.status IN ('pending', 'processing') AND a.start_state = 'started' AND a.created_at < now() - make_interval(secs => $1)
        AND a.id > $2
     UNION
     SELECT a.id, a.status, j.id, j.status
       FROM jobs j JOIN actions a ON a.id = j.action_id
      WHERE j.status IN ('queued', 'claimed', 'running', 'retry_scheduled') AND a.start_state = 'started'
        AND j.created_at < now() - make_interval(secs => $1) AND a.id > $2
      ORDER BY 1 LIMIT ${PAGE_ROWS}`, [config.graceSeconds, afterId]),
  (row) => row.action_id, 0, (rows) => countMoved(rows, 'reconciling a lost workflow', ownedIds, async (row) => {
    const state = await workflowState(client, ownerOf(row));
    if (state.kind === 'running') return false;
    const message = lostWorkflowMessage(state);
    if ((OPEN_ACTION_STATUSES as readonly string[]).includes(row.status)) {
      const failed = await db.transaction((m) => releaseAndClose(m, row.action_id, 'failed', message, { errorCode: 'workflow_lost', retryable: true }));
      if (!failed) return false;
      log.warn('reconciled an action whose workflow stopped: hold released, action failed', {
        actionId: row.action_id, jobId: row.job_id, workflow: state.kind === 'closed' ? state.status : 'missing',
      });
      await announceFailure(client, config.taskQueue, row.action_id);
      return true;
    }
    if (!(await finishJobAsItsAction(db.manager, row.job_id!))) return false;
    log.warn('reconciled a job whose workflow stopped after its action ended', { actionId: row.action_id, jobId: row.job_id });
    return true;
  }))).moved;
}

/** How far behind its last horizon a pass looks again: a completion committed late (a long transaction) is not missed. */
const HORIZON_MARGIN_SECONDS = 60;

/**
 * Outcomes no workflow announced. A workflow terminated between its charge and its announcement leaves a completed
 * action with no workflow to send its completion event (so does a `renderAction` of a workflow started before the
 * `visible-steps` patch, which charges and completes the action itself, still running when an operator terminated
 * its workflow); and the failure the reconciler itself records is announced by a workflow it starts, which a failed
 * start leaves unsent. Past the grace period, a completed or failed action that was accepted (`started`), with a
 * subscriber of its event and no delivery of it, whose workflow ended without completing (terminated, timed out) or
 * is gone, gets an announcement workflow (one per action and outcome: never twice). Answers how many.
 *
 * A pass reads the completions since the last pass's horizon (`reconciler_progress`, shared by every process, a
 * minute of margin), in the order they completed, and moves the horizon to where it stopped: each completion is
 * looked at about once, however many a day brings. With no horizon yet, or an old one, it reads the last day.
 */
export async function announceUnannouncedOutcomes(db: DataSource, client: Client, config: ReconcileConfig): Promise<number> {
  // Times travel as text (microseconds, as stored): a JavaScript Date would round them to milliseconds.
  const [{ since, cutoff }] = await sqlRows<{ since: string; cutoff: string }>(db.manager,
    `SELECT greatest(now() - interval '1 day', (SELECT horizon FROM reconciler_progress WHERE pass = 'announcements') - make_interval(secs => $2))::text AS since,
            (now() - make_interval(secs => $1))::text AS cutoff`,
    [config.graceSeconds, HORIZON_MARGIN_SECONDS]);
  let reached = since;
  /** The first completion whose workflow still runs: it may yet end without announcing, so the horizon stays there. */
  let stillRunning: string | undefined;
  const { moved, finished } = await inPages((after: { completedAt: string; id: number }) => sqlRows<Owned & { completed_at: string }>(db.manager,
    `SELECT a.id AS action_id, a.status, a.completed_at::text AS completed_at, j.id AS job_id, j.status AS job_status
       FROM actions a LEFT JOIN jobs j ON j.action_id = a.id
      WHERE a.status IN ('completed', 'failed') AND a.completed_at < $1::timestamptz AND a.completed_at >= $3::timestamptz
        AND (a.completed_at, a.id) > ($3::timestamptz, $4)
        AND a.start_state = 'started'
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.action_id = a.id AND d.event = $2::jsonb -> a.type ->> a.status)
        AND (a.webhook_url IS NOT NULL OR EXISTS (
              SELECT 1 FROM webhooks w WHERE w.account_id = a.account_id AND w.deleted_at IS NULL AND w.is_active
                 AND ($2::jsonb -> a.type ->> a.status) = ANY(w.events) AND w.created_at <= a.completed_at
                 -- a batch's item is announced only to webhooks that ask for items' events (planDeliveries)
                 AND (w.item_events OR NOT EXISTS (SELECT 1 FROM batch_items i WHERE i.action_id = a.id))))
      ORDER BY a.completed_at, a.id LIMIT ${PAGE_ROWS}`, [cutoff, EVENTS_BY_TYPE_JSON, after.completedAt, after.id]),
  (row) => ({ completedAt: row.completed_at, id: row.action_id }), { completedAt: since, id: 0 },
  (rows) => {
    reached = rows[rows.length - 1].completed_at;
    return countMoved(rows, 'announcing an outcome', ownedIds, async (row) => {
      // A workflow that completed did announce: with no delivery, the action had no subscriber then (one registered
      // since is not sent events of earlier actions). One still running is looked at again by later passes.
      const state = await workflowState(client, ownerOf(row));
      if (state.kind === 'running') stillRunning ??= row.completed_at;
      if (state.kind === 'running' || (state.kind === 'closed' && state.status === 'COMPLETED')) return false;
      const outcome = row.status as 'completed' | 'failed';
      await startAnnouncement(client, config.taskQueue, row.action_id, outcome, 'its workflow ended without sending it');
      log.warn('announced an outcome its workflow did not', { actionId: row.action_id, jobId: row.job_id, outcome });
      return true;
    });
  });
  // A pass that read everything up to the cutoff moves the horizon there; one stopped by its page limit, to where it
  // stopped; either way no further than a completion whose workflow still runs.
  await db.query(`INSERT INTO reconciler_progress (pass, horizon) VALUES ('announcements', least($1::timestamptz, $2::timestamptz))
                  ON CONFLICT (pass) DO UPDATE SET horizon = EXCLUDED.horizon`, [finished ? cutoff : reached, stillRunning ?? null]);
  return moved;
}

/**
 * Pending deliveries (past the grace period, within a day) whose workflow is not running. One that an operator
 * terminated, or that ended otherwise without recording an outcome, is closed as failed, so that it does not show
 * `pending` forever and the integrator may redeliver it; one whose workflow never started (its start failed) is
 * started with its attempts. Answers how many moved.
 */
export async function settleLostDeliveries(db: DataSource, client: Client, config: ReconcileConfig): Promise<number> {
  return (await inPages((after: { createdAt: Date; id: string }) => stalePendingDeliveries(db, config.graceSeconds, after, PAGE_ROWS),
  (row) => ({ createdAt: row.created_at, id: row.id }), { createdAt: new Date(0), id: '00000000-0000-0000-0000-000000000000' },
  (rows) => countMoved(rows, 'settling a delivery', (delivery) => ({ deliveryId: delivery.id }),
    (delivery) => settleLostDelivery(db, client, config, delivery)))).moved;
}

async function settleLostDelivery(db: DataSource, client: Client, config: ReconcileConfig, delivery: PendingDelivery): Promise<boolean> {
  const state = await workflowState(client, deliveryWorkflowId(delivery.id));
  if (state.kind === 'running') return false;
  if (state.kind === 'missing') {
    try {
      await startDeliveryWorkflow(client, config.taskQueue, {
        deliveryId: delivery.id, actionId: delivery.action_id, event: delivery.event, maxAttempts: delivery.max_attempts,
        retryInitialMs: config.webhookRetryInitialMs, summary: `${delivery.event} (started by the reconciler)`,
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return false; // started meanwhile (its action's workflow, another worker)
      throw err;
    }
    log.warn('started a delivery whose workflow never started', { deliveryId: delivery.id, actionId: delivery.action_id });
    return true;
  }
  // Still pending past the grace period since its last change: a redelivery meanwhile (which makes it pending again
  // and starts a new run) moves `updated_at`, which keeps it out of this.
  const message = `Delivery stopped: its workflow ended (${state.status.toLowerCase().replace(/_/g, ' ')})`;
  if (!(await closeStoppedDelivery(db, delivery.id, message, config.graceSeconds))) return false;
  log.warn('closed a delivery whose workflow stopped without an outcome', { deliveryId: delivery.id, workflow: state.status });
  return true;
}

/** Rows a pass reads at once, and pages at most: rows a pass leaves alone (still running) cannot hide the rest. */
const PAGE_ROWS = 100;
const PASS_PAGES = 10;

/**
 * Runs `step` over pages of `fetch` (each after the last key of the one before), up to PASS_PAGES; answers the sum
 * and whether it read to the end (false: stopped by the page limit, rows left for the next pass).
 */
async function inPages<T, K>(
  fetch: (after: K) => Promise<T[]>, keyOf: (row: T) => K, first: K, step: (rows: T[]) => Promise<number>,
): Promise<{ moved: number; finished: boolean }> {
  let moved = 0;
  let after = first;
  for (let page = 0; page < PASS_PAGES; page++) {
    const rows = await fetch(after);
    if (rows.length > 0) moved += await step(rows);
    if (rows.length < PAGE_ROWS) return { moved, finished: true };
    after = keyOf(rows[rows.length - 1]);
  }
  return { moved, finished: false };
}

/**
 * Runs `step` on each row, one at a time; a row whose step throws is logged (with `idsOf` it) and left to the next
 * pass. Answers how many rows the steps moved.
 */
async function countMoved<R>(rows: R[], what: string, idsOf: (row: R) => Record<string, unknown>, step: (row: R) => Promise<boolean>): Promise<number> {
  let moved = 0;
  for (const row of rows) {
    try {
      if (await step(row)) moved++;
    } catch (err) {
      log.error(`reconciler: ${what} failed`, { ...idsOf(row), error: String(err) });
    }
  }
  return moved;
}


/** A failure announcement that cannot be started now is started by the next pass of announceUnannouncedOutcomes. */
async function announceFailure(client: Client, taskQueue: string, actionId: number): Promise<void> {
  await startAnnouncement(client, taskQueue, actionId, 'failed', 'closed by the reconciler')
    .catch((err) => log.warn('could not start the failure announcement; the next pass will', { actionId, error: String(err) }));
}

/**
 * Batches whose workflow is not where the batch's row says, past the start grace: one still `queued` whose workflow
 * does not exist (its API stopped before it started it) is started (a batch holds nothing until its workflow
 * accepts its items, so starting it late loses nothing); one `queued` or `running` whose workflow has ended without
 * ending it (an operator terminated it) is cancelled as the API cancels one (its items not started are cancelled;
 * its accepted items' holds are then released by settleStarts, its running jobs end on their own). Answers how
 * many it moved.
 */
export async function reconcileBatches(db: DataSource, client: Client, config: ReconcileConfig): Promise<number> {
  let moved = 0;
  for (const batch of await staleLiveBatches(db, config.startGraceSeconds ?? 30)) {
    const state = await workflowState(client, batchWorkflowId(batch.id));
    if (state.kind === 'running') continue;
    if (state.kind === 'missing' && batch.status === 'queued') {
      await startBatchWorkflow(client, config.taskQueue, { batchId: batch.id, accountId: batch.account_id, items: batch.items });
      log.warn('started a batch whose workflow never started', { batchId: batch.id });
    } else {
      await cancelBatchRecord(db, batch.id);
      log.warn('cancelled a batch whose workflow ended without ending it', { batchId: batch.id, workflow: state.kind });
    }
    moved++;
  }
  return moved;
}

/**
 * One pass (`reconcile`) unless another process's, or this one's previous, is still under way: with N worker
 * processes the deployment makes one pass a minute, not N. The lock is held by a session of its own, ended after
 * the pass (or with a process that dies mid-pass), so it can never stay behind in a pooled connection. Answers
 * whether this call made the pass.
 */
export async function reconcileExclusively(db: DataSource, client: Client, config: ReconcileConfig): Promise<boolean> {
  const session = new PgClient({ connectionString: databaseUrlOf(db), ...CONNECTION_SETTINGS, application_name: 'imagery-reconciler-lock' });
  session.on('error', () => undefined); // a lost lock session ends the pass's claim; the next minute tries again
  try {
    await session.connect();
    const { rows: [{ locked }] } = await session.query('SELECT pg_try_advisory_lock($1) AS locked', [ADVISORY_LOCKS.reconciler]);
    if (!locked) return false;
    await reconcile(db, client, config); // logs its own failures
    return true;
  } catch (err) {
    log.warn('the reconciler lock could not be taken; the next pass will try again', { error: String(err) });
    return false;
  } finally {
    await session.end().catch(() => undefined); // gives the lock back
  }
}

/** One pass of each; logs instead of throwing, so the timer keeps going. */
export async function reconcile(db: DataSource, client: Client, config: ReconcileConfig): Promise<void> {
  try {
    await settleStarts(db, client, config.startGraceSeconds ?? 30, config.graceSeconds);
    await reconcileLostWorkflows(db, client, config);
    await announceUnannouncedOutcomes(db, client, config);
    await settleLostDeliveries(db, client, config);
    await reconcileBatches(db, client, config);
  } catch (err) {
    log.warn('reconciler pass failed; the next one will try again', { error: String(err) });
  }
}
