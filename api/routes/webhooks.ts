/**
 * Registered webhooks: create (the secret is shown once), list, delete, and the delivery log with redelivery.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Context } from 'koa';
import { newWebhookSecret, REGISTERED_ATTEMPTS, WEBHOOK_EVENTS } from '../../src/webhooks/events';
import {
  deleteWebhook, listWebhooks, recentDeliveries, registerWebhook, reopenDelivery, restoreDelivery, webhookOwner,
} from '../../src/webhooks/store';
import { checkWebhookUrl } from '../../src/webhooks/urls';
import { startDeliveryWorkflow } from '../../src/temporal/starts';
import { AppError, forbidden, notFound, ValidationFailed } from '../../src/errors';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { iso } from '../representations';

const webhookIdPath = {
  type: 'object', required: ['webhook_id'], properties: { webhook_id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
};

const webhookSchema = (withSecret: boolean) => ({
  type: 'object',
  required: ['id', 'url', 'events', 'is_active', 'created_at', ...(withSecret ? ['secret'] : ['updated_at'])],
  properties: {
    id: { type: 'integer' },
    url: { type: 'string' },
    ...(withSecret ? { secret: { type: 'string', pattern: '^whsec_', description: 'Shown only here; keep it to verify signatures' } } : {}),
    events: { type: 'array', items: { type: 'string', enum: [...WEBHOOK_EVENTS] } },
    is_active: { type: 'boolean' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
});

const deliverySchema = {
  type: 'object',
  required: ['delivery_id', 'event', 'action_id', 'status', 'attempts', 'max_attempts', 'created_at'],
  properties: {
    delivery_id: { type: 'string', format: 'uuid', description: 'Also the X-Service-Job-Id header of every attempt' },
    event: { type: 'string' },
    action_id: { type: 'integer' },
    status: { type: 'string', enum: ['pending', 'succeeded', 'failed', 'skipped'] },
    attempts: { type: 'integer' },
    max_attempts: { type: 'integer' },
    last_status_code: { type: ['integer', 'null'] },
    last_error: { type: ['string', 'null'] },
    last_attempt_at: { type: ['string', 'null'], format: 'date-time' },
    delivered_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: { type: 'string', format: 'date-time' },
  },
};

/** 422 with one message that names the rule, in the validation shape. */
function refuse(field: string, msg: string, type: string): never {
  throw new ValidationFailed([{ loc: ['body', field], msg, type }]);
}

/** A delivery as the API shows it. */
const deliveryView = ({ id, ...r }: Record<string, unknown>) => ({
  delivery_id: id, ...r, last_attempt_at: iso(r.last_attempt_at as Date | null), delivered_at: iso(r.delivered_at as Date | null),
  created_at: iso(r.created_at as Date),
});

export function webhookRoutes({ db, outbound, secrets, temporal, config }: ApiServices): Route[] {
  async function ownWebhook(ctx: Context, id: number) {
    const hook = await webhookOwner(db, id);
    if (!hook) throw notFound(`Webhook ${id}`);
    if (hook.account_id !== (ctx.state.caller as Caller).accountId) throw forbidden(`Webhook ${id}`);
    return hook;
  }

  return [
    {
      method: 'post', path: '/webhooks', operationId: 'createWebhook', tag: 'Webhooks',
      summary: 'Register a webhook (HTTPS, public address, at most 5 per account); the secret is returned only here',
      body: {
        type: 'object', required: ['url'],
        properties: {
          url: { type: 'string', maxLength: 2000 },
          events: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 100 }, description: 'Default: all events' },
        },
      },
      responses: { 201: { description: 'The webhook with its secret', schema: webhookSchema(true) } },
      async handle(ctx, { body }: { body: { url: string; events?: string[] } }) {
        const caller = ctx.state.caller as Caller;
        const unknown = (body.events ?? []).filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
        if (unknown.length > 0) refuse('events', `Unknown event names: ${unknown.join(', ')}; known: ${WEBHOOK_EVENTS.join(', ')}`, 'enum');
        const url = await checkWebhookUrl(outbound, body.url, 'url');
        const events = body.events && body.events.length > 0 ? [...new Set(body.events)] : [...WEBHOOK_EVENTS];
        const secret = newWebhookSecret();
        const created = await registerWebhook(db, caller.accountId, { url: url.toString(), sealedSecret: secrets.seal(secret), events });
        ctx.status = 201;
        ctx.body = { id: created.id, url: created.url, secret, events: created.events, is_active: created.is_active, created_at: iso(created.created_at) };
      },
    },
    {
      method: 'get', path: '/webhooks', operationId: 'listWebhooks', tag: 'Webhooks', summary: 'Registered webhooks (without secrets)',
      responses: {
        200: { description: 'The webhooks', schema: { type: 'object', required: ['webhooks'], properties: { webhooks: { type: 'array', items: webhookSchema(false) } } } },
      },
      async handle(ctx) {
        const rows = await listWebhooks(db, (ctx.state.caller as Caller).accountId);
        ctx.body = { webhooks: rows.map((r) => ({ ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) })) };
      },
    },
    {
      method: 'delete', path: '/webhooks/{webhook_id}', operationId: 'deleteWebhook', tag: 'Webhooks',
      summary: 'Delete a webhook; it receives nothing more, pending retries included',
      params: webhookIdPath,
      responses: { 200: { description: 'Deleted', schema: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'boolean', enum: [true] } } } } },
      async handle(ctx, { params }) {
        await ownWebhook(ctx, params.webhook_id);
        await deleteWebhook(db, params.webhook_id);
        ctx.body = { deleted: true };
      },
    },
    {
      method: 'get', path: '/webhooks/{webhook_id}/deliveries', operationId: 'listWebhookDeliveries', tag: 'Webhooks',
      summary: 'Recent deliveries of a webhook (newest first): event, action, attempts, last status code and error',
      params: webhookIdPath,
      query: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 } } },
      responses: {
        200: { description: 'Deliveries', schema: { type: 'object', required: ['deliveries'], properties: { deliveries: { type: 'array', items: deliverySchema } } } },
      },
      async handle(ctx, { params, query }) {
        await ownWebhook(ctx, params.webhook_id);
        const rows = await recentDeliveries(db, params.webhook_id, query.limit);
        ctx.body = { deliveries: rows.map(deliveryView) };
      },
    },
    {
      method: 'post', path: '/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver', operationId: 'redeliverWebhook', tag: 'Webhooks',
      summary: 'Send a delivery again, with the same delivery id (X-Service-Job-Id)',
      params: {
        type: 'object', required: ['webhook_id', 'delivery_id'],
        properties: { webhook_id: webhookIdPath.properties.webhook_id, delivery_id: { type: 'string', format: 'uuid' } },
      },
      responses: {
        202: { description: 'The delivery was started again', schema: deliverySchema },
        409: { description: '`delivery_in_progress`: the delivery is still being attempted' },
      },
      async handle(ctx, { params }) {
        await ownWebhook(ctx, params.webhook_id);
        const delivery = await reopenDelivery(db, params.delivery_id, params.webhook_id);
        if (delivery === 'missing') throw notFound(`Delivery ${params.delivery_id}`);
        if (delivery === 'in-progress') throw new AppError(409, 'delivery_in_progress', 'The delivery is still being attempted');
        const { previous_status: previousStatus, ...answer } = delivery;
        try {
          await startDeliveryWorkflow(temporal, config.taskQueue, {
            deliveryId: delivery.id, actionId: delivery.action_id, event: delivery.event, maxAttempts: REGISTERED_ATTEMPTS,
            retryInitialMs: config.webhookRetryInitialMs, summary: `${delivery.event} → registered webhook (redelivery)`,
          });
        } catch (err) {
          // Not started: the delivery goes back to how it was (else it would look pending beside a closed run).
          await restoreDelivery(db, delivery.id, previousStatus);
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          // The last attempt's workflow has recorded its outcome but not closed yet: as good as in progress.
          throw new AppError(409, 'delivery_in_progress', 'The delivery is still being attempted');
        }
        ctx.status = 202;
        ctx.body = deliveryView(answer);
      },
    },
  ];
}
