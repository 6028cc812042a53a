/**
 * Closing moves of an action's read model, shared by the workflow's activities, the API's cancels and the
 * reconciler. Every transaction that settles a hold and moves an action takes its row locks in one order: the
 * spark hold, then the action, then (through the statements that follow) its card and its job. Two such
 * transactions on one action therefore queue; they never deadlock.
 */
import type { EntityManager } from 'typeorm';
import { CompoundStatement } from '../db/statement';
import type { ActionProduct, ActionType } from '../db/entities/action';
import { sqlRow } from '../db/sql';
import { chargeParts, countCharged, settleHold } from '../billing/sparks';
import { afterCommit } from '../db/after-commit';
import { actionsTotal } from '../metrics/registry';
import { closeJobOfAction, countJobMove, jobHasEnded, type JobMove, jobMovePart, moveJobRecord } from '../jobs/lifecycle';

type OpenStatus = 'pending' | 'processing';
export const OPEN_ACTION_STATUSES: readonly OpenStatus[] = ['pending', 'processing'];

/** How an action ended, as its workflow answers it. */
export type ActionEnd = { status: 'completed'; assetPath: string } | { status: 'failed'; error: string } | { status: 'cancelled' };

/** The message of an action whose workflow never started (Temporal unreachable, or the API died in between). */
export const START_FAILED_MESSAGE = 'Generation was unavailable';

/** A new card, or a new version of an existing one (an edit), as the accept statement places the action. */
export type CardChoice = { kind: 'new'; id: number; contentType: 'photo' | 'video'; aspectRatio: string } | { kind: 'existing'; id: number };

/**
 * The `card` part of the accept statement (src/db/statement.ts): a new card in the statement's `project` (written
 * only when the key was `claimed`), or the existing card of a new version. One row, the card's `id`.
 */
export function cardPart(statement: CompoundStatement, accountId: number, card: CardChoice): string {
  const p = (value: unknown) => statement.param(value);
  if (card.kind === 'existing') return `SELECT ${p(card.id)}::int AS id FROM claimed`;
  return `INSERT INTO cards (id, account_id, project_id, status, content_type, aspect_ratio)
    SELECT ${p(card.id)}, ${p(accountId)}, project.id, 'pending', ${p(card.contentType)}, ${p(card.aspectRatio)} FROM project, claimed RETURNING id`;
}

/**
 * The `action` part of the accept statement: the action, `pending` and `starting` (its workflow not started yet;
 * its first step records it `started`), in the statement's `project` and `card`. One row, the action's `id`.
 */
export function actionPart(statement: CompoundStatement, action: {
  id: number; accountId: number; type: ActionType; product: ActionProduct; depth: number; parentActionId: number | null; price: number;
  params: object; clientGroupId: string | null; webhookUrl: string | null; provider: string;
}): string {
  const p = (value: unknown) => statement.param(value);
  return `INSERT INTO actions (id, account_id, project_id, card_id, type, product, status, start_state, depth, parent_action_id, price, params,
                        client_group_id, webhook_url, provider)
    SELECT ${p(action.id)}, ${p(action.accountId)}, project.id, card.id, ${p(action.type)}, ${p(action.product)}, 'pending', 'starting', ${p(action.depth)},
           ${p(action.parentActionId)}::int, ${p(action.price)}, ${p(JSON.stringify(action.params))}::jsonb, ${p(action.clientGroupId)}, ${p(action.webhookUrl)}, ${p(action.provider)}
      FROM project, card RETURNING id`;
}

/**
 * Moves a card, with every version's action, into another project (ownership checked by the caller). The actions
 * first, then the card: the house order, as a start, completion or close of one of its actions takes them.
 */
export async function moveCardToProject(m: EntityManager, cardId: number, projectId: number): Promise<void> {
  await m.query('UPDATE actions SET project_id = $2, updated_at = now() WHERE card_id = $1', [cardId, projectId]);
  await m.query('UPDATE cards SET project_id = $2, updated_at = now() WHERE id = $1', [cardId, projectId]);
}

/**
 * Locks the action's hold, then the action, in the order above; answers the action's current state. Call it
 * first in a transaction that is about to settle and close an action from outside its workflow.
 */
export async function lockForSettlement(m: EntityManager, actionId: number): Promise<{ status: string; startState: string } | undefined> {
  await m.query('SELECT 1 FROM spark_holds WHERE action_id = $1 FOR UPDATE', [actionId]);
  const row = await sqlRow(m, 'SELECT status, start_state FROM actions WHERE id = $1 FOR UPDATE', [actionId]);
  return row && { status: row.status, startState: row.start_state };
}

/**
 * Ends an action without a result (failed or cancelled) if it is still in one of `from`; answers whether it
 * moved. Its card shows the outcome only while the card has no completed version. Spark holds are the caller's
 * business (settle them in the same transaction, hold first).
 */
export async function closeAction(
  m: EntityManager, actionId: number, status: 'failed' | 'cancelled', errorMessage: string | null,
  from: readonly OpenStatus[] = OPEN_ACTION_STATUSES,
): Promise<boolean> {
  const closed = await sqlRow(m,
    `UPDATE actions SET status = $2, error_message = $3, completed_at = now(), updated_at = now()
      WHERE id = $1 AND status = ANY($4) RETURNING card_id, product, provider`, [actionId, status, errorMessage, from]);
  if (closed) {
    afterCommit(m, () => actionsTotal.inc({ product: closed.product, provider: closed.provider ?? 'none', outcome: status }));
    await m.query(`UPDATE cards SET status = $2, updated_at = now() WHERE id = $1 AND active_action_id IS NULL`, [closed.card_id, status]);
  }
  return Boolean(closed);
}

/**
 * Releases the hold and closes the action, and its v2 job if it has one, in the caller's transaction with the
 * locks in order. A job whose action was completed (charged) is left for its workflow to finish.
 */
export async function releaseAndClose(
  m: EntityManager, actionId: number, outcome: 'failed' | 'cancelled', errorMessage: string | null,
  job?: { errorCode: string; retryable: boolean },
): Promise<boolean> {
  await lockForSettlement(m, actionId);
  return releaseAndCloseLocked(m, actionId, outcome, errorMessage, job);
}

/** releaseAndClose for a caller that already holds the settlement locks. */
async function releaseAndCloseLocked(
  m: EntityManager, actionId: number, outcome: 'failed' | 'cancelled', errorMessage: string | null,
  job?: { errorCode: string; retryable: boolean },
): Promise<boolean> {
  await settleHold(m, actionId, 'released');
  const closed = await closeAction(m, actionId, outcome, errorMessage);
  await closeJobOfAction(m, actionId, outcome, errorMessage, job);
  return closed;
}

/**
 * Gives up on an action whose workflow never started: it was never accepted, so its hold is released, it fails,
 * its job fails, and its Idempotency-Key is forgotten (a repeat is a new request). Only a start still in flight
 * (`starting`) is abandoned; whoever moves it first wins: this, or the workflow's first step (`startAction`), or a
 * confirmation that the workflow exists (the reconciler, a repeat of the action's Idempotency-Key).
 */
export async function abandonStart(m: EntityManager, actionId: number): Promise<boolean> {
  await lockForSettlement(m, actionId);
  const moved = await sqlRow(m, `UPDATE actions SET start_state = 'abandoned' WHERE id = $1 AND start_state = 'starting' RETURNING id`, [actionId]);
  if (!moved) return false;
  await releaseAndCloseLocked(m, actionId, 'failed', START_FAILED_MESSAGE, { errorCode: 'generation_unavailable', retryable: true });
  await m.query('DELETE FROM idempotency_keys WHERE action_id = $1', [actionId]);
  return true;
}

/** Where the action's start stands: `starting`, `started` (its workflow exists) or `abandoned`. */
export async function startStateOf(m: EntityManager, actionId: number): Promise<string | undefined> {
  return (await sqlRow(m, 'SELECT start_state FROM actions WHERE id = $1', [actionId]))?.start_state;
}

/** Records that an action's workflow exists (seen in Temporal); answers false when the start was abandoned meanwhile. */
export async function confirmStart(m: EntityManager, actionId: number): Promise<boolean> {
  const row = await sqlRow(m,
    `UPDATE actions SET start_state = 'started' WHERE id = $1 AND start_state IN ('starting', 'started') RETURNING id`, [actionId]);
  return Boolean(row);
}

export type StartOutcome = 'started' | 'cancelled' | 'completed';
export type CompleteOutcome = 'completed' | 'cancelled';

/** How a v2 job ends when its action fails: `dead_letter` once its retryable attempts are spent. */
export interface JobFailure { jobId: string; status: 'failed' | 'dead_letter'; errorCode: string; retryable: boolean }

/**
 * pending -> processing in the caller's transaction (the card too, while it has no completed version), and its start
 * recorded (`started`: its workflow runs, as this step shows). Answers `completed` when it already is (a workflow
 * task lost after its completion was committed runs again, or a workflow reset after the action ended): the steps
 * after it find their work done and answer as recorded, charging nothing more. Answers `cancelled` (stop) when the
 * action was cancelled or failed.
 */
export async function startAction(m: EntityManager, actionId: number): Promise<StartOutcome> {
  return startWithJob(m, actionId);
}

/** A v2 job's first move: from queued to claimed/routing, as its action starts. */
const CLAIMED: JobMove = { status: 'claimed', phase: 'routing', from: ['queued'] };

/**
 * Starts the action (as `startAction`) and moves its v2 job, if given, from queued to claimed/routing, in one
 * statement (its own transaction when the caller has none): the action, then its card and its job, in the house
 * order. `cancelled` when either was ended first. A repeat of the step (a workflow task lost after it, mid-render)
 * finds the job past routing and leaves it.
 */
export async function startWithJob(m: EntityManager, actionId: number, jobId?: string): Promise<StartOutcome> {
  const statement = new CompoundStatement();
  statement.with('moved', `UPDATE actions SET status = 'processing', start_state = 'started', started_at = now(), updated_at = now()
      WHERE id = ${statement.param(actionId)} AND status = 'pending' RETURNING card_id`);
  statement.with('card', 'UPDATE cards c SET status = \'processing\', updated_at = now() FROM moved WHERE c.id = moved.card_id AND c.active_action_id IS NULL RETURNING c.id');
  if (jobId) statement.with('job', jobMovePart(statement, jobId, CLAIMED, 'EXISTS (SELECT 1 FROM moved)'));
  // Read in the house order (the action, its card, its job): each part runs when it is first read.
  const moved = await sqlRow(m, statement.text(`SELECT (SELECT count(*)::int FROM moved) AS n${jobId ? ', (SELECT count(*) FROM card) AS cards, (SELECT count(*)::int FROM job) AS job' : ''}`), statement.values);
  if (moved!.n > 0) return !jobId || moved!.job > 0 || !(await jobHasEnded(m, jobId)) ? 'started' : 'cancelled';
  const current = await sqlRow(m, 'SELECT status FROM actions WHERE id = $1', [actionId]);
  if (!current) throw new Error(`action ${actionId} not found`);
  // A retried start finds it processing: go on. Completed: go on, as above. Cancelled or failed (closed by a cancel,
  // the API or the reconciler): stop, so nothing is rendered for free.
  if (current.status === 'completed') return 'completed';
  if (current.status !== 'processing') return 'cancelled';
  if (!jobId || (await moveJobRecord(m, jobId, CLAIMED))) return 'started';
  return (await jobHasEnded(m, jobId)) ? 'cancelled' : 'started';
}

/**
 * Charges the hold and marks the action completed, in the caller's transaction (or in one statement of its own): the
 * card's active version moves to it, and the job, if given, to succeeded/postprocessing. Answers `cancelled` when the hold was released meanwhile
 * (a cancel, or a start the API gave up on), closing the action as such.
 */
export async function completeRendered(m: EntityManager, actionId: number, assetPath: string, jobId?: string): Promise<CompleteOutcome> {
  // One statement (its own transaction when the caller has none). A part runs when the statement first reads it, the
  // parts nothing reads at its end: the hold charged first (what every settlement of the action locks first; `done`
  // reads it), the action (the FROM clause), its card and its job (read in that order by the select list), then the
  // ledger row and the account's balance.
  const statement = new CompoundStatement();
  const action = statement.param(actionId);
  chargeParts(statement, action);
  statement.with('done', `UPDATE actions SET status = 'completed', asset_path = ${statement.param(assetPath)}, completed_at = now(), updated_at = now()
     WHERE id = ${action} AND status IN ('pending', 'processing') AND EXISTS (SELECT 1 FROM charged) RETURNING card_id, product, provider, created_at`);
  // The card's active version: the newest completed one, by when it was made (ids are not in time order across processes).
  statement.with('card', `UPDATE cards c SET status = 'completed', updated_at = now(),
            active_action_id = CASE WHEN c.active_action_id IS NULL
                                      OR (SELECT (x.created_at, x.id) FROM actions x WHERE x.id = c.active_action_id) < (done.created_at, ${action}::int)
                                    THEN ${action}::int ELSE c.active_action_id END
       FROM done WHERE c.id = done.card_id RETURNING c.id`);
  // The job after its action (the move's condition reads `done`) and its card (read before it, below).
  if (jobId) statement.with('job', jobMovePart(statement, jobId, SUCCEEDED, 'EXISTS (SELECT 1 FROM done)'));
  const row = await sqlRow(m, statement.text(`SELECT (SELECT amount FROM charged) AS amount, done.product, done.provider${jobId ? ', (SELECT count(*) FROM card) AS cards, (SELECT type FROM job) AS job_type' : ''}
      FROM (SELECT 1) one LEFT JOIN done ON true`), statement.values);
  if (row?.amount !== null && row?.amount !== undefined) {
    countCharged(m, row.product, row.amount);
    if (row.product) afterCommit(m, () => actionsTotal.inc({ product: row.product, provider: row.provider ?? 'none', outcome: 'completed' }));
    if (!jobId || row.job_type) {
      if (jobId) countJobMove(m, { type: row.job_type }, SUCCEEDED);
      return 'completed';
    }
  } else {
    // Charged by an earlier attempt, or released meanwhile (cancelled, or failed by the API when the start looked
    // lost): then close it as such, in a transaction of its own unless the caller has one.
    const closeIfReleased = async (t: EntityManager) => {
      if ((await settleHold(t, actionId, 'charged')) !== 'released') return false;
      await closeAction(t, actionId, 'cancelled', null);
      return true;
    };
    if (await (m.queryRunner?.isTransactionActive ? closeIfReleased(m) : m.transaction(closeIfReleased))) return 'cancelled';
  }
  if (jobId) await moveJobRecord(m, jobId, SUCCEEDED); // charged by an earlier attempt, or its job moved apart
  return 'completed';
}

/** A v2 job's move as its action is charged and completed. */
const SUCCEEDED: JobMove = { status: 'succeeded', phase: 'postprocessing', retryable: false };

/** How a closed action ended, as its row records it (in the caller's transaction). */
export async function recordedEnd(m: EntityManager, actionId: number): Promise<ActionEnd> {
  const action = await sqlRow(m, 'SELECT status, asset_path, error_message FROM actions WHERE id = $1', [actionId]);
  if (action?.status === 'completed') return { status: 'completed', assetPath: action.asset_path };
  if (action?.status === 'failed') return { status: 'failed', error: action.error_message ?? 'Generation failed' };
  if (action?.status === 'cancelled') return { status: 'cancelled' };
  throw new Error(`action ${actionId} is not closed (${action?.status ?? 'missing'})`);
}

/**
 * Releases the hold and marks the action failed with a message the integrator may read; the job, if given, ends
 * as `job.status` with the same message.
 */
export async function failRendered(m: EntityManager, actionId: number, errorMessage: string, job?: JobFailure): Promise<void> {
  await settleHold(m, actionId, 'released');
  await closeAction(m, actionId, 'failed', errorMessage);
  if (job) await moveJobRecord(m, job.jobId, { status: job.status, phase: 'failed', retryable: job.retryable, errorCode: job.errorCode, errorMessage });
}

/** Releases the hold and marks the action cancelled (a cancel that reached a running render). */
export async function cancelRendered(m: EntityManager, actionId: number): Promise<void> {
  await settleHold(m, actionId, 'released');
  await closeAction(m, actionId, 'cancelled', null);
}

/**
 * Ends an action whose render failed or was cancelled: releases the hold and closes the action as `ending` says,
 * unless the render completed and charged it first (a cancel that raced its last step). Answers how the action
 * really ended.
 */
export async function endUnrendered(
  m: EntityManager, actionId: number, ending: { status: 'failed'; error: string } | { status: 'cancelled' },
): Promise<ActionEnd> {
  if ((await settleHold(m, actionId, 'released')) === 'released') {
    await closeAction(m, actionId, ending.status, ending.status === 'failed' ? ending.error : null);
  }
  return recordedEnd(m, actionId);
}

/** Records the video task the provider runs for the action, once submitted: a retry checks it, never submits again. */
export async function recordProviderTask(m: EntityManager, actionId: number, taskId: string): Promise<void> {
  await m.query('UPDATE actions SET provider_task_id = $2 WHERE id = $1', [actionId, taskId]);
}

/** Forgets a task that ended in failure (if it is still the recorded one), so that a retry submits a new one. */
export async function forgetProviderTask(m: EntityManager, actionId: number, taskId: string): Promise<void> {
  await m.query('UPDATE actions SET provider_task_id = NULL WHERE id = $1 AND provider_task_id = $2', [actionId, taskId]);
}

/** The video task recorded for the action, if any. */
export async function providerTaskOf(m: EntityManager, actionId: number): Promise<string | null> {
  return (await sqlRow(m, 'SELECT provider_task_id FROM actions WHERE id = $1', [actionId]))?.provider_task_id ?? null;
}

/**
 * As a render's result is about to be stored: records that the action's results are stored with thumbnails (when
 * this one's was: each thumbnail is stored before its result) and makes its v2 job's move, if given (`finalizing`),
 * in one statement, the action's row locked first (the house order). Answers false when the job had already ended
 * (cancelled meanwhile: it is left as it is), true otherwise.
 */
export async function recordStoring(m: EntityManager, actionId: number, thumbnailed: boolean, job?: { jobId: string; move: JobMove }): Promise<boolean> {
  if (!thumbnailed && !job) return true;
  const statement = new CompoundStatement();
  const action = statement.param(actionId);
  statement.with('locked', `SELECT id FROM actions WHERE id = ${action} FOR NO KEY UPDATE`);
  if (thumbnailed) statement.with('thumb', `UPDATE actions SET has_thumbnail = true WHERE id = ${action} AND NOT has_thumbnail AND EXISTS (SELECT 1 FROM locked) RETURNING id`);
  if (job) statement.with('job', jobMovePart(statement, job.jobId, job.move, 'EXISTS (SELECT 1 FROM locked)'));
  const row = await sqlRow(m, statement.text(`SELECT (SELECT count(*) FROM locked) AS locked${thumbnailed ? ', (SELECT count(*) FROM thumb) AS thumbs' : ''}${job ? ', (SELECT type FROM job) AS job_type' : ''}`),
    statement.values);
  if (!job) return true;
  countJobMove(m, row?.job_type ? { type: row.job_type } : undefined, job.move);
  return Boolean(row?.job_type);
}

/** The provider's percent for live progress; a change adds an action event (migration ActionEvents). */
export async function recordProgress(m: EntityManager, actionId: number, percent: number): Promise<void> {
  await m.query('UPDATE actions SET progress = $2 WHERE id = $1 AND progress IS DISTINCT FROM $2', [actionId, percent]);
}
