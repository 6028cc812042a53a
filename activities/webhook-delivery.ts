/**
 * Webhook deliveries: plan them for an action's outcome (one row per target, idempotent), send one attempt,
 * and close a delivery that ran out of attempts. The HTTP call obeys the outbound address policy at send time.
 */
import { webhookAttempts, webhookDeliveries } from '../src/metrics/registry';
import { ApplicationFailure, Context } from '@temporalio/activity';
import {
  batchEvent, type BatchWebhookPayload, DELIVERY_ANSWER_MAX_BYTES, DELIVERY_TIMEOUT_MS, isPermanentRefusal, signature, standardWebhookHeaders, WebhookPayload,
} from '../src/webhooks/events';
import {
  closeExhaustedDelivery, type DeliveryPlan, deliveryToSend, planBatchDeliveries, planDeliveries, recordAttempt, skipDelivery,
} from '../src/webhooks/store';
import { OutboundFailed, OutboundRefused } from '../src/net/outbound';
import { FAILURE_TYPES } from '../src/temporal/contract';
import type { ActivityDeps } from './deps';
import { batchTotals, readBatch } from '../src/batches/store';
import { DRILL_FAILED_DELIVERY_ATTEMPTS } from '../src/providers/sandbox';

/** Seconds from a Retry-After header (delta seconds or an HTTP date), within reason. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const seconds = /^\d+$/.test(value) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 3600) * 1000 : undefined;
}

/** A batch's event as it ended: its counts and money read now (they no longer change). */
async function batchPayload(db: ActivityDeps['db'], batchId: string, livemode: boolean): Promise<BatchWebhookPayload> {
  const batch = (await readBatch(db.manager, batchId))!;
  const totals = await batchTotals(db.manager, batchId);
  return { batch_id: batchId, status: batch.status, items: batch.items, counts: totals.counts, price: batch.price, charged: totals.charged, livemode };
}

export function createWebhookDeliveryActivities({ db, outbound, secrets, webhookRetryInitialMs }: ActivityDeps) {
  return {
    /** The deliveries of an action's outcome: each subscribed active webhook, and the ad-hoc URL if any. */
    async planDeliveries(actionId: number, outcome: 'completed' | 'failed'): Promise<DeliveryPlan> {
      return planDeliveries(db, actionId, outcome, webhookRetryInitialMs);
    },

    /** The deliveries of a batch's end, as an action's. */
    async planBatchDeliveries(batchId: string, status: string): Promise<DeliveryPlan> {
      return planBatchDeliveries(db, batchId, batchEvent(status), webhookRetryInitialMs);
    },

    /** One attempt: POST the payload; 2xx succeeds, permanent refusals are not retried, the rest is. */
    async deliverWebhook(deliveryId: string): Promise<'delivered' | 'skipped'> {
      const d = await deliveryToSend(db, deliveryId);
      if (!d) throw new Error(`delivery ${deliveryId} not found`);
      // Delivered already: a second run of its workflow (an operator's reset of the action's workflow starts its
      // deliveries again) sends nothing more. A redelivery through the API makes it pending first.
      if (d.status === 'succeeded') return 'delivered';
      if (d.webhook_id !== null && (d.deleted_at || !d.is_active)) {
        await skipDelivery(db, deliveryId);
        webhookDeliveries.inc({ outcome: 'skipped' });
        return 'skipped';
      }
      const payload: WebhookPayload | BatchWebhookPayload = d.batch_id
        ? await batchPayload(db, d.batch_id, d.livemode)
        : { action_id: d.action_id, project_id: d.project_id, card_id: d.card_id, type: d.type, livemode: d.livemode };
      if (d.client_group_id) payload.client_group_id = d.client_group_id;
      if (d.sandbox_scenario === 'webhook_fail_then_succeed' && d.attempts < DRILL_FAILED_DELIVERY_ATTEMPTS) {
        // The drill: the first attempts are recorded as the receiver's 500, unsent, and retried as one would be.
        await recordAttempt(db, deliveryId, 500, 'HTTP 500 (sandbox drill webhook_fail_then_succeed: not sent)');
        webhookAttempts.inc({ outcome: 'http_error' });
        throw ApplicationFailure.create({ type: FAILURE_TYPES.webhookUnreachable, message: 'The receiver answered HTTP 500 (sandbox drill)' });
      }
      const body = JSON.stringify(payload);
      const secret = d.sealed_secret ? secrets.open(d.sealed_secret) : undefined;
      // The contract's X-Service-* headers and, beside them, the Standard Webhooks ones: the delivery id is the message
      // id of every attempt (and of a redelivery), the timestamp is this attempt's; both signatures for a registered
      // webhook only (an ad-hoc URL has no secret).
      const headers: Record<string, string> = {
        'Content-Type': 'application/json', 'X-Service-Event': d.event, 'X-Service-Job-Id': deliveryId,
        'User-Agent': 'product-imagery-webhooks/1', 'Content-Length': String(Buffer.byteLength(body)),
        ...standardWebhookHeaders(deliveryId, Math.floor(Date.now() / 1000), body, secret),
      };
      if (secret !== undefined) headers['X-Service-Signature'] = signature(secret, body);

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
        await recordAttempt(db, deliveryId, null, message);
        webhookAttempts.inc({ outcome: err instanceof OutboundRefused ? 'refused' : 'unreachable' });
        if (err instanceof OutboundRefused) {
          throw ApplicationFailure.create({ type: FAILURE_TYPES.webhookRefused, message: `The URL ${message}`, nonRetryable: true });
        }
        throw ApplicationFailure.create({ type: FAILURE_TYPES.webhookUnreachable, message: err instanceof OutboundFailed ? message : `Could not deliver: ${message}` });
      }
      if (status >= 200 && status < 300) {
        await recordAttempt(db, deliveryId, status, null, 'succeeded');
        webhookAttempts.inc({ outcome: 'delivered' });
        webhookDeliveries.inc({ outcome: 'delivered' });
        return 'delivered';
      }
      await recordAttempt(db, deliveryId, status, `HTTP ${status}`);
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
      if (await closeExhaustedDelivery(db, deliveryId)) webhookDeliveries.inc({ outcome: 'exhausted' });
    },
  };
}
