/**
 * The reads of actions and cards that the API's views and the activities make (the writes are
 * `lifecycle.ts`'s). Polls read by primary key through named prepared statements.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { Action, Card } from '../db/entities';
import type { HoldStatus } from '../db/entities/spark-hold';
import { prepared } from '../db/prepared';
import { batchedRows } from '../db/batcher';
import { positionTimeSql } from '../db/keyset';

/** What a status poll shows of actions, by their primary keys: only the columns the answer needs. */
const ACTION_STATUSES = prepared('action_statuses',
  `SELECT a.id, a.account_id, a.status, a.type, a.asset_path, a.error_message, a.created_at, a.completed_at, a.price,
          h.status AS hold_status, h.amount AS hold_amount
     FROM actions a LEFT JOIN spark_holds h ON h.action_id = a.id WHERE a.id = ANY($1::int[])`);

export interface ActionStatusRow {
  id: number; account_id: number; status: Action['status']; type: Action['type']; asset_path: string | null;
  error_message: string | null; created_at: Date; completed_at: Date | null; price: number;
  hold_status: HoldStatus | null; hold_amount: number | null;
}

/**
 * What a status poll shows of an action (with its hold), or undefined; the reads of polls that arrive together are
 * one statement (batchedRows). The id must be an int4 (the route's schema checks it).
 */
export function actionStatusReader(db: DataSource): (actionId: number) => Promise<Readonly<ActionStatusRow> | undefined> {
  return batchedRows<number, ActionStatusRow>(db, ACTION_STATUSES, 'id');
}

/** The holds of a page of actions, by the unique action_id: one indexed read, none for an empty page. */
export async function holdsOf(db: DataSource, actionIds: number[]): Promise<Map<number, { hold_status: HoldStatus; hold_amount: number }>> {
  const rows: { action_id: number; hold_status: HoldStatus; hold_amount: number }[] = actionIds.length === 0 ? [] : await db.query(
    'SELECT action_id, status AS hold_status, amount AS hold_amount FROM spark_holds WHERE action_id = ANY($1::int[])', [actionIds]);
  return new Map(rows.map((r) => [r.action_id, r]));
}

/** The filters of `GET /results` (dates are whole UTC days: `createdAfter` inclusive, `createdBefore` exclusive). */
export interface ResultFilters {
  type?: string; status?: string; createdAfter?: string; createdBefore?: string; projectId?: number; clientGroupId?: string;
  page: number; pageSize: number;
}

/** A page of the account's actions, newest first, and how many match in all. */
export async function listActions(db: DataSource, accountId: number, f: ResultFilters): Promise<{ rows: Action[]; total: number }> {
  const q = db.manager.createQueryBuilder(Action, 'a').where('a.accountId = :account', { account: accountId });
  if (f.type) q.andWhere('a.type = :type', { type: f.type });
  if (f.status) q.andWhere('a.status = :status', { status: f.status });
  if (f.createdAfter) q.andWhere(`a.createdAt >= (:after::date AT TIME ZONE 'UTC')`, { after: f.createdAfter });
  if (f.createdBefore) q.andWhere(`a.createdAt < (:before::date AT TIME ZONE 'UTC')`, { before: f.createdBefore });
  if (f.projectId) q.andWhere('a.projectId = :project', { project: f.projectId });
  if (f.clientGroupId !== undefined) q.andWhere('a.clientGroupId = :group', { group: f.clientGroupId });
  const [rows, total] = await q.orderBy('a.createdAt', 'DESC').addOrderBy('a.id', 'DESC')
    .skip((f.page - 1) * f.pageSize).take(f.pageSize).getManyAndCount();
  return { rows, total };
}

/** An action by id (the whole row), or undefined. */
export function findAction(m: EntityManager, actionId: number): Promise<Action | null> {
  return m.findOneBy(Action, { id: actionId });
}

/** An action that must exist (an activity's own action). */
export function loadAction(m: EntityManager, actionId: number): Promise<Action> {
  return m.findOneByOrFail(Action, { id: actionId });
}

/**
 * A project's cards and actions, oldest first: by when they were made (ids are taken ahead in blocks per process,
 * src/db/id-blocks.ts, so ids of different processes do not follow each other in time), the id breaking ties.
 */
export async function contentsOfProject(m: EntityManager, projectId: number): Promise<{ cards: Card[]; actions: Action[] }> {
  const [cards, actions] = await Promise.all([
    m.find(Card, { where: { projectId }, order: { createdAt: 'ASC', id: 'ASC' } }),
    m.find(Action, { where: { projectId }, order: { createdAt: 'ASC', id: 'ASC' } }),
  ]);
  return { cards, actions };
}

/** A card's versions (its actions), oldest first (by when they were made, as above). */
export function versionsOfCard(m: EntityManager, cardId: number): Promise<Action[]> {
  return m.find(Action, { where: { cardId }, order: { createdAt: 'ASC', id: 'ASC' } });
}


/**
 * SQL of the product an action (`a`, in project `p`) shows: its own request's, else its card's first generation's
 * (an edit's), else its project's.
 */
const productNameOf = (a: string, p: string) => `COALESCE(${a}.params ->> 'productName',
  (SELECT r.params ->> 'productName' FROM actions r WHERE r.card_id = ${a}.card_id AND r.depth = 0 ORDER BY r.id LIMIT 1), ${p}.product_name)`;

/** One of the account's latest actions as the dashboard's overview lists it, with its v2 job where it has one. */
export interface LatestActionRow {
  id: number; type: Action['type']; status: Action['status']; percent: number | null; product_name: string | null;
  job_id: string | null; job_status: string | null; phase: string | null; created_at: Date; completed_at: Date | null;
}

/** The account's `limit` latest actions, newest first (the `actions_account_created` index, one statement). */
export function latestActions(db: DataSource, accountId: number, limit: number): Promise<LatestActionRow[]> {
  return db.query(
    `SELECT a.id, a.type, a.status, CASE WHEN a.status = 'completed' THEN 100 ELSE a.progress END AS percent,
            ${productNameOf('a', 'p')} AS product_name, j.id AS job_id, j.status AS job_status, j.phase, a.created_at, a.completed_at
       FROM (SELECT * FROM actions WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2) a
       JOIN projects p ON p.id = a.project_id
       LEFT JOIN jobs j ON j.action_id = a.id
      ORDER BY a.created_at DESC, a.id DESC`, [accountId, limit]);
}

/** One action of the account's gallery, newest first. */
export interface GalleryRow {
  id: number; type: Action['type']; status: Action['status']; product_name: string | null; card_id: number; project_id: number;
  asset_path: string | null; has_thumbnail: boolean; created_at: Date; position: string;
}

/**
 * A page of the account's actions for the dashboard's gallery, newest first, after `after` (a row's `position`:
 * its creation to the microsecond, in UTC, and its id), keyset-paged on the `actions_account_created` index; with
 * `batchId`, that batch's items only.
 */
export function galleryPage(
  db: DataSource, accountId: number, after: { at: string; id: number } | undefined, limit: number, batchId?: string,
): Promise<GalleryRow[]> {
  const params: unknown[] = [accountId, limit];
  const param = (value: unknown) => `$${params.push(value)}`;
  const resume = after ? `AND (created_at, id) < (${param(after.at)}::timestamptz, ${param(after.id)})` : '';
  // A batch's items only (the batch_items_action index finds whether an action is one).
  const ofBatch = batchId ? `AND id IN (SELECT action_id FROM batch_items WHERE batch_id = ${param(batchId)}::uuid AND action_id IS NOT NULL)` : '';
  return db.query(
    `SELECT a.id, a.type, a.status, ${productNameOf('a', 'p')} AS product_name, a.card_id, a.project_id,
            a.asset_path, a.has_thumbnail, a.created_at,
            ${positionTimeSql('a.created_at')} AS position
       FROM (SELECT * FROM actions WHERE account_id = $1 ${resume} ${ofBatch}
              ORDER BY created_at DESC, id DESC LIMIT $2) a
       JOIN projects p ON p.id = a.project_id
      ORDER BY a.created_at DESC, a.id DESC`, params);
}

/** An action's latest `limit` recorded events (live progress's log), oldest first. */
export function actionTimeline(db: DataSource, actionId: number, limit: number): Promise<Array<{
  seq: number; action_status: string; job_status: string | null; phase: string | null; attempt: number | null;
  provider: string | null; percent: number | null; created_at: Date;
}>> {
  return db.query(
    `SELECT * FROM (SELECT seq, action_status, job_status, phase, attempt, provider, percent, created_at
                      FROM action_events WHERE action_id = $1 ORDER BY seq DESC LIMIT $2) e ORDER BY seq`, [actionId, limit]);
}

/** The first `limit` versions of a card (its first generation and its edits), oldest first. */
export function cardVersions(db: DataSource, cardId: number, limit: number): Promise<Action[]> {
  return db.manager.find(Action, { where: { cardId }, order: { createdAt: 'ASC', id: 'ASC' }, take: limit });
}

/** An action as the dashboard's detail shows it: the row, its hold, and its v2 job where it has one. */
export interface ActionDetailRow {
  action: Action; hold_status: HoldStatus | null; hold_amount: number | null;
  job: { id: string; status: string; phase: string; attempts: number } | null;
}

export async function actionDetail(db: DataSource, actionId: number): Promise<ActionDetailRow | undefined> {
  const action = await db.manager.findOneBy(Action, { id: actionId });
  if (!action) return undefined;
  const [extra] = await db.query(
    `SELECT h.status AS hold_status, h.amount AS hold_amount, j.id AS job_id, j.status AS job_status, j.phase, j.attempts
       FROM (SELECT $1::int AS id) a LEFT JOIN spark_holds h ON h.action_id = a.id LEFT JOIN jobs j ON j.action_id = a.id`, [actionId]);
  return {
    action, hold_status: extra.hold_status, hold_amount: extra.hold_amount,
    job: extra.job_id ? { id: extra.job_id, status: extra.job_status, phase: extra.phase, attempts: extra.attempts } : null,
  };
}
