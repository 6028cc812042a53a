/**
 * Webhook deliveries: plan them for an action's outcome (one row per target, idempotent), send one attempt,
 * and close a delivery that ran out of attempts. The HTTP call obeys the outbound address policy at send time.
 */
import { webhookAttempts, webhookDeliveries } from '../src/metrics/registry';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { sqlRow, sqlRows } from '../src/db/sql';
import {
  AD_HOC_ATTEMPTS, DELIVERY_ANSWER_MAX_BYTES, DELIVERY_TIMEOUT_MS, eventFor, isPermanentRefusal, REGISTERED_ATTEMPTS, signature, WebhookPayload,
} from '../src/webhooks/events';
import { OutboundFailed, OutboundRefused } from '../src/net/outbound';
import { FAILURE_TYPES } from '../src/temporal/contract';
import type { ActivityDeps } from './deps';

export interface PlannedDelivery { deliveryId: string; event: string; maxAttempts: number; registered: boolean }
export interface DeliveryPlan { deliveries: PlannedDelivery[]; retryInitialMs: number }

/** Seconds from a Retry-After header (delta seconds or an HTTP date), within reason. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const seconds = /^\d+$/.test(value) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 3600) * 1000 : undefined;
}

export function createWebhookDeliveryActivities({ db, outbound, secrets, webhookRetryInitialMs }: ActivityDeps) {
  async function record(deliveryId: string, status: number | null, error: string | null, outcome?: 'succeeded') {
    await db.query(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = $2, last_error = $3, last_attempt_at = now(),
              status = COALESCE($4, status), delivered_at = CASE WHEN $4 = 'succeeded' THEN now() ELSE delivered_at END, updated_at = now()
        WHERE id = $1`, [deliveryId, status, error, outcome ?? null]);
  }

  return {
    /** The deliveries of an action's outcome: each subscribed active webhook, and the ad-hoc URL if any. */
    async planDeliveries(actionId: number, outcome: 'completed' | 'failed'): Promise<DeliveryPlan> {
      const action = await sqlRow(db.manager, 'SELECT account_id, type, webhook_url FROM actions WHERE id = $1', [actionId]);
      if (!action) throw new Error(`action ${actionId} not found`);
      const event = eventFor(action.type, outcome);
      await db.query(
        `INSERT INTO webhook_deliveries (account_id, webhook_id, action_id, event, url, max_attempts)
         SELECT account_id, id, $2, $3, url, $4 FROM webhooks
          WHERE account_id = $1 AND deleted_at IS NULL AND is_active AND $3 = ANY(events)
         ON CONFLICT DO NOTHING`, [action.account_id, actionId, event, REGISTERED_ATTEMPTS]);
      if (action.webhook_url) {
        await db.query(
          `INSERT INTO webhook_deliveries (account_id, webhook_id, action_id, event, url, max_attempts)
           VALUES ($1, NULL, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, [action.account_id, actionId, event, action.webhook_url, AD_HOC_ATTEMPTS]);
      }
      const rows = await sqlRows(db.manager,
        'SELECT id, event, max_attempts, webhook_id FROM webhook_deliveries WHERE action_id = $1 AND event = $2 ORDER BY created_at, id', [actionId, event]);
      return {
        deliveries: rows.map((r) => ({ deliveryId: r.id, event: r.event, maxAttempts: r.max_attempts, registered: r.webhook_id !== null })),
        retryInitialMs: webhookRetryInitialMs,
      };
    },

    /** One attempt: POST the payload; 2xx succeeds, permanent refusals are not retried, the rest is. */
    async deliverWebhook(deliveryId: string): Promise<'delivered' | 'skipped'> {
      const d = await sqlRow(db.manager,
        `SELECT d.url, d.event, d.webhook_id, d.status, w.sealed_secret, w.deleted_at, w.is_active,
                a.id AS action_id, a.project_id, a.card_id, a.type, a.client_group_id
           FROM webhook_deliveries d JOIN actions a ON a.id = d.action_id LEFT JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.id = $1`, [deliveryId]);
      if (!d) throw new Error(`delivery ${deliveryId} not found`);
      // Delivered already: a second run of its workflow (an operator's reset of the action's workflow starts its
      // deliveries again) sends nothing more. A redelivery through the API makes it pending first.
      if (d.status === 'succeeded') return 'delivered';
      if (d.webhook_id !== null && (d.deleted_at || !d.is_active)) {
        await db.query(`UPDATE webhook_deliveries SET status = 'skipped', last_error = 'webhook deleted', updated_at = now() WHERE id = $1`, [deliveryId]);
        webhookDeliveries.inc({ outcome: 'skipped' });
        return 'skipped';
      }
      const payload: WebhookPayload = { action_id: d.action_id, project_id: d.project_id, card_id: d.card_id, type: d.type };
      if (d.client_group_id) payload.client_group_id = d.client_group_id;
      const body = JSON.stringify(payload);
      const headers: Record<string, string> = {
        'Content-Type': 'application/json', 'X-Service-Event': d.event, 'X-Service-Job-Id': deliveryId,
        'User-Agent': 'product-imagery-webhooks/1', 'Content-Length': String(Buffer.byteLength(body)),
      };
      if (d.sealed_secret) headers['X-Service-Signature'] = signature(secrets.open(d.sealed_secret), body);

      let status: number;
      let retryAfter: number | undefined;
      try {
        const response = await outbound.request(new URL(d.url), {
          method: 'POST', headers, body: Buffer.from(body), timeoutMs: DELIVERY_TIMEOUT_MS, maxBodyBytes: DELIVERY_ANSWER_MAX_BYTES,
        });
        status = response.status;
        retryAfter = [429, 503].includes(status) ? retryAfterMs(response.headers['retry-after']) : undefined;
      } catch (err) {
        const message = (err as Error).message;
        await record(deliveryId, null, message);
        webhookAttempts.inc({ outcome: err instanceof OutboundRefused ? 'refused' : 'unreachable' });
        if (err instanceof OutboundRefused) {
          throw ApplicationFailure.create({ type: FAILURE_TYPES.webhookRefused, message: `The URL ${message}`, nonRetryable: true });
        }
        throw ApplicationFailure.create({ type: FAILURE_TYPES.webhookUnreachable, message: err instanceof OutboundFailed ? message : `Could not deliver: ${message}` });
      }
      if (status >= 200 && status < 300) {
        await record(deliveryId, status, null, 'succeeded');
        webhookAttempts.inc({ outcome: 'delivered' });
        webhookDeliveries.inc({ outcome: 'delivered' });
        return 'delivered';
      }
      await record(deliveryId, status, `HTTP ${status}`);
      webhookAttempts.inc({ outcome: isPermanentRefusal(status) ? 'refused' : 'http_error' });
      Context.current().log.info('webhook answered with an error', { deliveryId, status });
      throw ApplicationFailure.create({
        type: isPermanentRefusal(status) ? FAILURE_TYPES.webhookRefused : FAILURE_TYPES.webhookUnreachable,
        message: `The receiver answered HTTP ${status}`,
        nonRetryable: isPermanentRefusal(status),
        nextRetryDelay: retryAfter,
      });
    },

    /** Closes a delivery whose attempts are spent (or that was refused for good). */
    async failDelivery(deliveryId: string): Promise<void> {
      const [, closed] = await db.query(`UPDATE webhook_deliveries SET status = 'failed', updated_at = now() WHERE id = $1 AND status = 'pending'`, [deliveryId]);
      if (closed > 0) webhookDeliveries.inc({ outcome: 'exhausted' });
    },
  };
}
