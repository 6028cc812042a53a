/**
 * Every statement on `webhooks` and `webhook_deliveries`: registration, the deliveries an outcome plans (one row per
 * target, idempotent), each attempt recorded, redelivery, and what the reconciler closes. The HTTP of a delivery is
 * `activities/webhook-delivery.ts`'s, the account's use cases management.ts's.
 */
import type { DataSource } from 'typeorm';
import { sqlRow, sqlRows } from '../db/sql';
import { lockAccount } from '../accounts/accounts';
import { ValidationFailed } from '../errors';
import { AD_HOC_ATTEMPTS, EVENTS_BY_TYPE_JSON, MAX_WEBHOOKS, REGISTERED_ATTEMPTS } from './events';

export interface WebhookRow { id: number; url: string; events: string[]; item_events: boolean; is_active: boolean; created_at: Date; updated_at?: Date }

/** A live (not deleted) webhook's owner, or undefined. */
export function webhookOwner(db: DataSource, webhookId: number): Promise<{ id: number; account_id: number } | undefined> {
  return sqlRow(db.manager, 'SELECT id, account_id FROM webhooks WHERE id = $1 AND deleted_at IS NULL', [webhookId]);
}

/** Registers a webhook, at most MAX_WEBHOOKS live per account (checked under the account's lock: 422 past it). */
export async function registerWebhook(
  db: DataSource, accountId: number, hook: { url: string; sealedSecret: string; events: string[]; itemEvents: boolean },
): Promise<WebhookRow> {
  return db.transaction(async (m) => {
    await lockAccount(m, accountId);
    const count = await sqlRow(m, 'SELECT count(*)::int AS n FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL', [accountId]);
    if (count!.n >= MAX_WEBHOOKS) {
      throw new ValidationFailed([{ loc: ['body', 'url'], msg: `The account already has ${MAX_WEBHOOKS} webhooks; delete one first`, type: 'maxItems' }]);
    }
    return (await sqlRow<WebhookRow>(m,
      `INSERT INTO webhooks (account_id, url, sealed_secret, events, item_events) VALUES ($1, $2, $3, $4, $5)
       RETURNING id, url, events, item_events, is_active, created_at`, [accountId, hook.url, hook.sealedSecret, hook.events, hook.itemEvents]))!;
  });
}

/** The account's live webhooks, oldest first (no secrets). */
export function listWebhooks(db: DataSource, accountId: number): Promise<WebhookRow[]> {
  return sqlRows<WebhookRow>(db.manager,
    'SELECT id, url, events, item_events, is_active, created_at, updated_at FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL ORDER BY id', [accountId]);
}

/** Deletes a webhook: it receives nothing more (its pending deliveries are skipped at their next attempt). */
export async function deleteWebhook(db: DataSource, webhookId: number): Promise<void> {
  await db.query('UPDATE webhooks SET deleted_at = now(), is_active = false, updated_at = now() WHERE id = $1', [webhookId]);
}

/** Switches a live webhook on or off; undefined when it is deleted. */
export function setWebhookActive(db: DataSource, webhookId: number, active: boolean): Promise<WebhookRow | undefined> {
  return sqlRow<WebhookRow>(db.manager,
    `UPDATE webhooks SET is_active = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL
     RETURNING id, url, events, item_events, is_active, created_at, updated_at`, [webhookId, active]);
}

/** A delivery as its log shows it. */
export interface DeliveryRow {
  /** The action whose outcome it announces, or (batch events) the batch. */
  id: string; event: string; action_id: number | null; batch_id: string | null; status: string; attempts: number; max_attempts: number;
  last_status_code: number | null; last_error: string | null; last_attempt_at: Date | null; delivered_at: Date | null; created_at: Date;
}
const DELIVERY_VIEW = 'id, event, action_id, batch_id, status, attempts, max_attempts, last_status_code, last_error, last_attempt_at, delivered_at, created_at';

/** A webhook's latest deliveries, newest first. */
export function recentDeliveries(db: DataSource, webhookId: number, limit: number): Promise<DeliveryRow[]> {
  return sqlRows<DeliveryRow>(db.manager, `SELECT ${DELIVERY_VIEW} FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, id LIMIT $2`,
    [webhookId, limit]);
}

/**
 * Makes a delivery of the webhook pending again for a redelivery, unless it is pending already; answers it with
 * the status it had (`previous_status`), `in-progress` when it is still pending, or `missing`.
 */
export async function reopenDelivery(
  db: DataSource, deliveryId: string, webhookId: number,
): Promise<(DeliveryRow & { previous_status: string }) | 'in-progress' | 'missing'> {
  const reopened = await sqlRow<DeliveryRow & { previous_status: string }>(db.manager,
    `UPDATE webhook_deliveries d SET status = 'pending', updated_at = now()
       FROM (SELECT id, status AS previous_status FROM webhook_deliveries WHERE id = $1 FOR UPDATE) p
      WHERE d.id = p.id AND d.webhook_id = $2 AND d.status <> 'pending'
      RETURNING d.id, d.event, d.action_id, d.batch_id, d.status, d.attempts, d.max_attempts, d.last_status_code, d.last_error,
                d.last_attempt_at, d.delivered_at, d.created_at, p.previous_status`, [deliveryId, webhookId]);
  if (reopened) return reopened;
  const exists = await sqlRow(db.manager, 'SELECT 1 FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2', [deliveryId, webhookId]);
  return exists ? 'in-progress' as const : 'missing' as const;
}

/** Puts a reopened delivery back as it was (its redelivery could not be started). */
export async function restoreDelivery(db: DataSource, deliveryId: string, previousStatus: string): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET status = $2 WHERE id = $1 AND status = 'pending'`, [deliveryId, previousStatus]);
}

export interface PlannedDelivery { deliveryId: string; event: string; maxAttempts: number; registered: boolean }
/** An outcome's deliveries, as the workflow that announces it starts them (one child workflow each). */
export interface DeliveryPlan { deliveries: PlannedDelivery[]; retryInitialMs: number }

/**
 * The deliveries of an action's outcome, planned in one statement: one row per subscribed active webhook of the
 * account and one for the action's ad-hoc `webhook_url`, each made once (a repeat finds the rows made before). A row
 * a concurrent run of the same plan commits while this one runs is in neither's answer but the one that made it
 * (which starts its delivery); a delivery whose workflow never started is started by the reconciler. Only the
 * outcome the action has is announced: a failure planned for an action cancelled meanwhile plans nothing.
 * Shaped for the workflow that starts them (one child workflow each).
 */
export async function planDeliveries(db: DataSource, actionId: number, outcome: 'completed' | 'failed', retryInitialMs: number): Promise<DeliveryPlan> {
  const rows = await sqlRows<{ id: string; event: string; max_attempts: number; webhook_id: number | null }>(db.manager,
    `WITH target AS (
       SELECT id, account_id, webhook_url, $2::jsonb -> type ->> $3 AS event FROM actions WHERE id = $1 AND status = $3
     ), registered AS (
       INSERT INTO webhook_deliveries (account_id, webhook_id, action_id, event, url, max_attempts)
       SELECT w.account_id, w.id, t.id, t.event, w.url, $4 FROM webhooks w JOIN target t ON t.account_id = w.account_id
        WHERE w.deleted_at IS NULL AND w.is_active AND t.event = ANY(w.events)
          AND (w.item_events OR NOT EXISTS (SELECT 1 FROM batch_items i WHERE i.action_id = t.id))
       ON CONFLICT DO NOTHING RETURNING id, event, max_attempts, webhook_id, created_at
     ), ad_hoc AS (
       INSERT INTO webhook_deliveries (account_id, webhook_id, action_id, event, url, max_attempts)
       SELECT account_id, NULL, id, event, webhook_url, $5 FROM target WHERE webhook_url IS NOT NULL
       ON CONFLICT DO NOTHING RETURNING id, event, max_attempts, webhook_id, created_at
     )
     SELECT id, event, max_attempts, webhook_id FROM (
       SELECT * FROM registered UNION ALL SELECT * FROM ad_hoc
       UNION ALL SELECT d.id, d.event, d.max_attempts, d.webhook_id, d.created_at FROM webhook_deliveries d JOIN target t ON d.action_id = t.id AND d.event = t.event
     ) planned ORDER BY created_at, id`,
    [actionId, EVENTS_BY_TYPE_JSON, outcome, REGISTERED_ATTEMPTS, AD_HOC_ATTEMPTS]);
  return {
    deliveries: rows.map((r) => ({ deliveryId: r.id, event: r.event, maxAttempts: r.max_attempts, registered: r.webhook_id !== null })),
    retryInitialMs,
  };
}

/**
 * The deliveries of a batch's end (`batch.completed` or `batch.failed`): one per subscribed active webhook of the
 * account and one for the batch's `webhook_url`, each made once, as an action's are.
 */
export async function planBatchDeliveries(db: DataSource, batchId: string, event: string, retryInitialMs: number): Promise<DeliveryPlan> {
  const rows = await sqlRows<{ id: string; event: string; max_attempts: number; webhook_id: number | null }>(db.manager,
    `WITH target AS (
       SELECT id, account_id, webhook_url FROM batches WHERE id = $1
     ), registered AS (
       INSERT INTO webhook_deliveries (account_id, webhook_id, batch_id, event, url, max_attempts)
       SELECT w.account_id, w.id, t.id, $2, w.url, $3 FROM webhooks w JOIN target t ON t.account_id = w.account_id
        WHERE w.deleted_at IS NULL AND w.is_active AND $2 = ANY(w.events)
       ON CONFLICT DO NOTHING RETURNING id, event, max_attempts, webhook_id, created_at
     ), ad_hoc AS (
       INSERT INTO webhook_deliveries (account_id, webhook_id, batch_id, event, url, max_attempts)
       SELECT account_id, NULL, id, $2, webhook_url, $4 FROM target WHERE webhook_url IS NOT NULL
       ON CONFLICT DO NOTHING RETURNING id, event, max_attempts, webhook_id, created_at
     )
     SELECT id, event, max_attempts, webhook_id FROM (
       SELECT * FROM registered UNION ALL SELECT * FROM ad_hoc
       UNION ALL SELECT d.id, d.event, d.max_attempts, d.webhook_id, d.created_at FROM webhook_deliveries d WHERE d.batch_id = $1 AND d.event = $2
     ) planned ORDER BY created_at, id`,
    [batchId, event, REGISTERED_ATTEMPTS, AD_HOC_ATTEMPTS]);
  return {
    deliveries: rows.map((r) => ({ deliveryId: r.id, event: r.event, maxAttempts: r.max_attempts, registered: r.webhook_id !== null })),
    retryInitialMs,
  };
}

/**
 * What one attempt of a delivery sends, and to whom (with the webhook's sealed secret and state, the attempts so far,
 * and the sandbox drill of its action or batch), or undefined. `batch_id` is set for a batch's event.
 */
export function deliveryToSend(db: DataSource, deliveryId: string) {
  return sqlRow(db.manager,
    `SELECT d.url, d.event, d.webhook_id, d.status, d.attempts, w.sealed_secret, w.deleted_at, w.is_active, d.batch_id,
            a.id AS action_id, a.project_id, a.card_id, a.type, COALESCE(a.client_group_id, b.client_group_id) AS client_group_id,
            COALESCE(a.params ->> 'sandbox_scenario', b.sandbox_scenario) AS sandbox_scenario,
            acc.sandbox_of IS NULL AS livemode
       FROM webhook_deliveries d JOIN accounts acc ON acc.id = d.account_id
       LEFT JOIN actions a ON a.id = d.action_id LEFT JOIN batches b ON b.id = d.batch_id
       LEFT JOIN webhooks w ON w.id = d.webhook_id
      WHERE d.id = $1`, [deliveryId]);
}

/** Records one attempt: its HTTP status or error, and `succeeded` when it was delivered. */
export async function recordAttempt(db: DataSource, deliveryId: string, status: number | null, error: string | null, outcome?: 'succeeded'): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = $2, last_error = $3, last_attempt_at = now(),
            status = COALESCE($4, status), delivered_at = CASE WHEN $4 = 'succeeded' THEN now() ELSE delivered_at END, updated_at = now()
      WHERE id = $1`, [deliveryId, status, error, outcome ?? null]);
}

/** A delivery to a webhook deleted or switched off since it was planned: skipped. */
export async function skipDelivery(db: DataSource, deliveryId: string): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET status = 'skipped', last_error = 'webhook deleted', updated_at = now() WHERE id = $1 AND status = 'pending'`, [deliveryId]);
}

/** Closes a pending delivery whose attempts are spent (or that was refused for good); answers whether it moved. */
export async function closeExhaustedDelivery(db: DataSource, deliveryId: string): Promise<boolean> {
  const [, closed] = await db.query(`UPDATE webhook_deliveries SET status = 'failed', updated_at = now() WHERE id = $1 AND status = 'pending'`, [deliveryId]);
  return closed > 0;
}

export interface PendingDelivery { id: string; action_id: number | null; event: string; max_attempts: number; webhook_id: string | null; created_at: Date }

/** A page of deliveries pending for longer than `graceSeconds` since their last change (within a day), after `after`. */
export function stalePendingDeliveries(db: DataSource, graceSeconds: number, after: { createdAt: Date; id: string }, limit: number): Promise<PendingDelivery[]> {
  return sqlRows<PendingDelivery>(db.manager,
    `SELECT id, action_id, event, max_attempts, webhook_id, created_at FROM webhook_deliveries
      WHERE status = 'pending' AND updated_at < now() - make_interval(secs => $1) AND created_at > now() - interval '1 day'
        AND (created_at, id) > ($2, $3)
      ORDER BY created_at, id LIMIT ${limit}`, [graceSeconds, after.createdAt, after.id]);
}

/** Closes a delivery whose workflow stopped without an outcome, unless it moved within `graceSeconds`. */
export async function closeStoppedDelivery(db: DataSource, deliveryId: string, message: string, graceSeconds: number): Promise<boolean> {
  const closed = await sqlRows(db.manager,
    `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, updated_at = now()
      WHERE id = $1 AND status = 'pending' AND updated_at < now() - make_interval(secs => $3) RETURNING id`, [deliveryId, message, graceSeconds]);
  return closed.length > 0;
}
