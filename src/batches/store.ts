/**
 * Catalogue batches' tables (migration Batches): a batch is written whole at creation (its items `pending`, or
 * `invalid` with `?partial=true`); its workflow accepts the items one by one (`claimItemPart`), each then an
 * ordinary v2 job; what an item shows afterwards is its job's. The reads the API serves are here too.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { sqlRow, sqlRows } from '../db/sql';
import type { CompoundStatement } from '../db/statement';
import { positionTimeSql } from '../db/keyset';
import type { IdempotencyClaim, StoredResponse } from '../idempotency/keys';
import { IDEMPOTENCY_WINDOW_SECONDS } from '../housekeeping/retention';

export const BATCH_STATUSES = ['queued', 'running', 'completed', 'completed_with_errors', 'budget_exhausted', 'cancelled'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
export const ENDED_BATCH_STATUSES: readonly BatchStatus[] = ['completed', 'completed_with_errors', 'budget_exhausted', 'cancelled'];

/** What an item shows: its own status until it has a job, then its job's (running while the job is live). */
export const ITEM_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'cancelled', 'invalid', 'skipped'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

export const ITEM_TYPES = ['photo', 'card', 'video', 'edit'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

/** The item's shown status, from `batch_items i LEFT JOIN jobs j ON j.id = i.job_id`. */
const SHOWN_STATUS = `CASE WHEN i.job_id IS NULL THEN i.status
                           WHEN j.status = 'succeeded' THEN 'succeeded'
                           WHEN j.status IN ('failed', 'dead_letter') THEN 'failed'
                           WHEN j.status = 'cancelled' THEN 'cancelled'
                           ELSE 'running' END`;

export interface NewItem {
  position: number;
  /** Null only for an invalid item that had none (or one that is not a string of at most 100 characters). */
  external_id: string | null;
  /** Null only for an invalid item of no known type. */
  type: ItemType | null;
  /** The item's body as validated (defaults filled), without `external_id` and `type`. */
  request: object;
  price: number;
  status: 'pending' | 'invalid';
  error_code?: string;
  error_message?: string;
}

export interface NewBatch {
  id: string;
  accountId: number;
  keyId: number;
  maxSparks: number | null;
  webhookUrl: string | null;
  /** Items' own events go to `webhookUrl` too. */
  itemEvents: boolean;
  clientGroupId: string | null;
  acceptLanguage: string | null;
  sandboxScenario: string | null;
  items: NewItem[];
}

export interface BatchRow {
  id: string; account_id: number; key_id: number; status: BatchStatus; max_sparks: number | null; webhook_url: string | null; item_events: boolean;
  client_group_id: string | null; accept_language: string | null; sandbox_scenario: string | null; items: number; price: number;
  created_at: Date; started_at: Date | null; completed_at: Date | null;
}

/**
 * Writes the batch and its items in one transaction, with the Idempotency-Key's claim (its answer stored with it).
 * Answers false when the key is already claimed (the caller answers the first request's response).
 */
export async function createBatch(db: DataSource, batch: NewBatch, claim: IdempotencyClaim | undefined, response: StoredResponse): Promise<boolean> {
  return db.transaction(async (m) => {
    if (claim) {
      const claimed = await sqlRows(m, `
        INSERT INTO idempotency_keys AS k (account_id, scope, key, request_hash, response_status, response_body)
        VALUES ($1, $2, $3, $4, $5, $6::jsonb)
        ON CONFLICT (account_id, scope, key) DO UPDATE
           SET request_hash = EXCLUDED.request_hash, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
               action_id = NULL, created_at = now()
         WHERE k.created_at <= now() - make_interval(secs => $7)
        RETURNING 1`, [claim.accountId, claim.scope, claim.key, claim.requestHash, response.status, JSON.stringify(response.body), IDEMPOTENCY_WINDOW_SECONDS]);
      if (claimed.length === 0) return false;
    }
    const price = batch.items.filter((item) => item.status === 'pending').reduce((sum, item) => sum + item.price, 0);
    await m.query(`
      INSERT INTO batches (id, account_id, key_id, max_sparks, webhook_url, item_events, client_group_id, accept_language, sandbox_scenario, items, price)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [batch.id, batch.accountId, batch.keyId, batch.maxSparks, batch.webhookUrl, batch.itemEvents, batch.clientGroupId, batch.acceptLanguage,
      batch.sandboxScenario, batch.items.length, price]);
    // In slices, so that no single parameter holds every item's images.
    for (let from = 0; from < batch.items.length; from += INSERT_SLICE) {
      await m.query(`
        INSERT INTO batch_items (batch_id, position, external_id, type, request, price, status, error_code, error_message)
        SELECT $1, x.position, x.external_id, x.type, x.request, x.price, x.status, x.error_code, x.error_message
          FROM jsonb_to_recordset($2::jsonb)
            AS x(position int, external_id text, type text, request jsonb, price int, status text, error_code text, error_message text)`,
      [batch.id, JSON.stringify(batch.items.slice(from, from + INSERT_SLICE))]);
    }
    return true;
  });
}

const INSERT_SLICE = 500;

/** Removes a batch whose workflow could not be started (nothing of it ran or was held), with its key's claim. */
export async function forgetBatch(db: DataSource, batchId: string, claim: IdempotencyClaim | undefined): Promise<void> {
  await db.transaction(async (m) => {
    await m.query('DELETE FROM batches WHERE id = $1 AND status = \'queued\'', [batchId]);
    if (claim) await m.query('DELETE FROM idempotency_keys WHERE account_id = $1 AND scope = $2 AND key = $3', [claim.accountId, claim.scope, claim.key]);
  });
}

export function readBatch(m: EntityManager, batchId: string): Promise<BatchRow | undefined> {
  return sqlRow<BatchRow>(m, 'SELECT * FROM batches WHERE id = $1', [batchId]);
}

export interface BatchTotals {
  counts: Record<ItemStatus, number>;
  held: number;
  charged: number;
}

/** Items per shown status, and the sparks the batch's items hold and have been charged so far. */
export async function batchTotals(m: EntityManager, batchId: string): Promise<BatchTotals> {
  const rows = await sqlRows<{ status: ItemStatus; n: number; held: number; charged: number }>(m, `
    SELECT ${SHOWN_STATUS} AS status, count(*)::int AS n,
           COALESCE(sum(h.amount) FILTER (WHERE h.status = 'held'), 0)::int AS held,
           COALESCE(sum(h.amount) FILTER (WHERE h.status = 'charged'), 0)::int AS charged
      FROM batch_items i LEFT JOIN jobs j ON j.id = i.job_id LEFT JOIN spark_holds h ON h.action_id = i.action_id
     WHERE i.batch_id = $1 GROUP BY 1`, [batchId]);
  const counts = Object.fromEntries(ITEM_STATUSES.map((status) => [status, 0])) as Record<ItemStatus, number>;
  let held = 0;
  let charged = 0;
  for (const row of rows) {
    counts[row.status] = row.n;
    held += row.held;
    charged += row.charged;
  }
  return { counts, held, charged };
}

export interface ItemRow {
  position: number; external_id: string | null; type: ItemType | null; status: ItemStatus; job_id: string | null; action_id: number | null;
  phase: string | null; error_code: string | null; error_message: string | null; asset_path: string | null; price: number;
}

/** A page of the batch's items in their order, after `afterPosition`, of one shown status or all. */
export function itemsPage(m: EntityManager, batchId: string, options: { status?: ItemStatus; afterPosition: number; limit: number }): Promise<ItemRow[]> {
  return sqlRows<ItemRow>(m, `
    SELECT * FROM (
      SELECT i.position, i.external_id, i.type, ${SHOWN_STATUS} AS status, i.job_id, i.action_id, j.phase, i.price,
             COALESCE(j.error_code, i.error_code) AS error_code, COALESCE(j.error_message, i.error_message) AS error_message,
             CASE WHEN j.status = 'succeeded' THEN a.asset_path END AS asset_path
        FROM batch_items i LEFT JOIN jobs j ON j.id = i.job_id LEFT JOIN actions a ON a.id = i.action_id
       WHERE i.batch_id = $1 AND i.position > $2
       ORDER BY i.position) shown
     WHERE $3::text IS NULL OR shown.status = $3
     LIMIT $4`, [batchId, options.afterPosition, options.status ?? null, options.limit]);
}

/**
 * Cancels a batch that has not ended: it ends `cancelled`, and its items that have not started are cancelled with
 * it (nothing was held for them). Answers whether this call cancelled it and, for a cancelled batch (by this call or
 * an earlier one, whose job cancels may not all have been made), the jobs of its started items that are still live,
 * for the caller to cancel as single jobs are. Takes the batch's row lock, which an
 * item's accept takes too (`claimItemPart`): an item is accepted before the cancel (and its job is answered) or not
 * at all.
 */
export async function cancelBatchRecord(db: DataSource, batchId: string): Promise<{ cancelled: boolean; live: { id: string; action_id: number; status: string; updated_at: Date }[] }> {
  return db.transaction(async (m) => {
    const cancelled = await sqlRows(m, `
      UPDATE batches SET status = 'cancelled', completed_at = now()
       WHERE id = $1 AND status IN ('queued', 'running') RETURNING id`, [batchId]);
    const [batch] = await sqlRows<{ status: string }>(m, 'SELECT status FROM batches WHERE id = $1', [batchId]);
    if (batch?.status !== 'cancelled') return { cancelled: false, live: [] };
    await m.query(`UPDATE batch_items SET status = 'cancelled' WHERE batch_id = $1 AND status = 'pending'`, [batchId]);
    const live = await sqlRows<{ id: string; action_id: number; status: string; updated_at: Date }>(m, `
      SELECT j.id, j.action_id, j.status, j.updated_at FROM batch_items i JOIN jobs j ON j.id = i.job_id
       WHERE i.batch_id = $1 AND j.status NOT IN ('succeeded', 'failed', 'dead_letter', 'cancelled')`, [batchId]);
    return { cancelled: cancelled.length > 0, live };
  });
}

/** The batch as its workflow starts it: `running`, unless it was cancelled first. Answers its row. */
export async function startBatchRecord(db: DataSource, batchId: string): Promise<BatchRow | undefined> {
  await db.query(`UPDATE batches SET status = 'running', started_at = now() WHERE id = $1 AND status = 'queued'`, [batchId]);
  return readBatch(db.manager, batchId);
}

/** Pending items after `afterPosition`, in order: the next the workflow may start. */
export function pendingItems(m: EntityManager, batchId: string, afterPosition: number, limit: number) {
  return sqlRows<{ position: number; type: ItemType; request: Record<string, unknown>; price: number; job_id: string | null; action_id: number | null }>(m, `
    SELECT position, type, request, price, job_id, action_id FROM batch_items
     WHERE batch_id = $1 AND position > $2 AND status IN ('pending', 'running') ORDER BY position LIMIT $3`, [batchId, afterPosition, limit]);
}

/**
 * The `claimed` part of an item's accept statement (src/actions/submit.ts, `batchItem`): makes the item the job's,
 * only while it has none and its batch runs (under the batch's row lock, which a cancel takes too); its price becomes
 * the one held. No row when it is not the statement's to take: the statement then writes nothing.
 */
export function claimItemPart(statement: CompoundStatement, batchId: string, position: number, job: { jobId: string; actionId: number; price: number }): string {
  const p = (value: unknown) => statement.param(value);
  return `UPDATE batch_items i SET status = 'running', job_id = ${p(job.jobId)}::uuid, action_id = ${p(job.actionId)}::int, price = ${p(job.price)}::int
      FROM (SELECT id FROM batches WHERE id = ${p(batchId)}::uuid AND status = 'running' FOR NO KEY UPDATE) b
     WHERE i.batch_id = b.id AND i.position = ${p(position)}::int AND i.job_id IS NULL AND i.status = 'pending'
    RETURNING 1 AS claimed`;
}

/**
 * The batch's status, and which of its started items at `positions` have ended (their jobs terminal), each with
 * whether its hold was released (anything but a success). One statement: what a batch's step polls while it waits.
 */
export async function endedItems(m: EntityManager, batchId: string, positions: number[]): Promise<{ status?: BatchStatus; ended: { position: number; released: boolean }[] }> {
  const rows = await sqlRows<{ status: BatchStatus; position: number | null; released: boolean | null }>(m, `
    SELECT b.status, e.position, e.released FROM batches b
      LEFT JOIN LATERAL (
        SELECT i.position, j.status <> 'succeeded' AS released FROM batch_items i JOIN jobs j ON j.id = i.job_id
         WHERE i.batch_id = b.id AND i.position = ANY($2::int[]) AND j.status IN ('succeeded', 'failed', 'dead_letter', 'cancelled')) e ON true
     WHERE b.id = $1`, [batchId, positions]);
  return {
    status: rows[0]?.status,
    ended: rows.filter((row) => row.position !== null).map((row) => ({ position: row.position!, released: row.released! })),
  };
}

/** An item that could not start (its images could not be read, the budget ran out, the batch was cancelled). */
export async function closeItem(
  db: DataSource, batchId: string, position: number, status: 'failed' | 'skipped' | 'cancelled', error?: { code: string; message: string },
): Promise<void> {
  await db.query(`
    UPDATE batch_items SET status = $3, error_code = $4, error_message = $5
     WHERE batch_id = $1 AND position = $2 AND status = 'pending' AND job_id IS NULL`,
  [batchId, position, status, error?.code ?? null, error?.message ?? null]);
}

/** The item rows that did not start because the batch stopped: `skipped` (budget) or `cancelled`. */
export async function closePendingItems(db: DataSource, batchId: string, status: 'skipped' | 'cancelled'): Promise<void> {
  await db.query(`UPDATE batch_items SET status = $2 WHERE batch_id = $1 AND status = 'pending'`, [batchId, status]);
}

/**
 * Ends the batch once every started item has ended: `budget_exhausted` when it stopped for money, else `completed`
 * or `completed_with_errors` (any item that did not succeed). A cancelled batch stays cancelled. Answers its status.
 */
export async function finishBatchRecord(db: DataSource, batchId: string, stoppedForBudget: boolean): Promise<BatchStatus> {
  const row = await sqlRow<{ status: BatchStatus }>(db.manager, `
    UPDATE batches b SET completed_at = now(),
           status = CASE WHEN $2 THEN 'budget_exhausted'
                         WHEN EXISTS (SELECT 1 FROM batch_items i LEFT JOIN jobs j ON j.id = i.job_id
                                       WHERE i.batch_id = b.id AND (${SHOWN_STATUS}) <> 'succeeded') THEN 'completed_with_errors'
                         ELSE 'completed' END
     WHERE id = $1 AND status IN ('queued', 'running') RETURNING status`, [batchId, stoppedForBudget]);
  return row?.status ?? (await readBatch(db.manager, batchId))?.status ?? 'cancelled'; // gone: forgotten by the API
}

/** Batches `queued` or `running` for longer than `graceSeconds`, oldest first (at most 100 a pass): the reconciler looks at their workflows. */
export function staleLiveBatches(db: DataSource, graceSeconds: number): Promise<Pick<BatchRow, 'id' | 'account_id' | 'items' | 'status'>[]> {
  return sqlRows(db.manager, `SELECT id, account_id, items, status FROM batches
    WHERE status IN ('queued', 'running') AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT 100`, [graceSeconds]);
}

/** One batch of the account's list (the dashboard's), newest first. */
export interface BatchListRow extends BatchRow { position: string }

/** A page of the account's batches, newest first, after `after` (a row's creation to the microsecond, in UTC, and its id). */
export function batchesPage(db: DataSource, accountId: number, after: { at: string; id: string } | undefined, limit: number): Promise<BatchListRow[]> {
  return sqlRows<BatchListRow>(db.manager,
    `SELECT *, ${positionTimeSql('created_at')} AS position FROM batches
      WHERE account_id = $1 ${after ? 'AND (created_at, id) < ($3::timestamptz, $4::uuid)' : ''}
      ORDER BY created_at DESC, id DESC LIMIT $2`,
    after ? [accountId, limit, after.at, after.id] : [accountId, limit]);
}
