/**
 * Registered webhooks: create (the secret is shown once), list, delete, and the delivery log with redelivery. The
 * use cases are src/webhooks/management.ts's; the dashboard's routes call the same.
 */
import { listWebhooks } from '../../src/webhooks/store';
import {
  deleteAccountWebhook, redeliver, registerAccountWebhook, webhookDeliveries,
} from '../../src/webhooks/management';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import {
  deliveriesQuery, deliveryPath, deliverySchema, deliveryView, type RegisterWebhookRequest, registerWebhookSchema,
  webhookIdPath, webhookSchema, webhookView,
} from '../schemas/webhooks';

export function webhookRoutes(services: ApiServices): Route[] {
  const { db } = services;
  const accountOf = (state: { caller?: Caller }) => (state.caller as Caller).accountId;
  return [
    {
      method: 'post', path: '/webhooks', operationId: 'createWebhook', tag: 'Webhooks',
      summary: 'Register a webhook (HTTPS, public address, at most 5 per account); the secret is returned only here',
      body: registerWebhookSchema,
      responses: { 201: { description: 'The webhook with its secret', schema: webhookSchema(true) } },
      async handle(ctx, { body }: { body: RegisterWebhookRequest }) {
        const { secret, ...created } = await registerAccountWebhook(services, accountOf(ctx.state), body);
        ctx.status = 201;
        ctx.body = { ...webhookView(created), secret };
      },
    },
    {
      method: 'get', path: '/webhooks', operationId: 'listWebhooks', tag: 'Webhooks', summary: 'Registered webhooks (without secrets)',
      responses: {
        200: { description: 'The webhooks', schema: { type: 'object', required: ['webhooks'], properties: { webhooks: { type: 'array', items: webhookSchema(false) } } } },
      },
      async handle(ctx) {
        ctx.body = { webhooks: (await listWebhooks(db, accountOf(ctx.state))).map(webhookView) };
      },
    },
    {
      method: 'delete', path: '/webhooks/{webhook_id}', operationId: 'deleteWebhook', tag: 'Webhooks',
      summary: 'Delete a webhook; it receives nothing more, pending retries included',
      params: webhookIdPath,
      responses: { 200: { description: 'Deleted', schema: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'boolean', enum: [true] } } } } },
      async handle(ctx, { params }) {
        await deleteAccountWebhook(services, accountOf(ctx.state), params.webhook_id);
        ctx.body = { deleted: true };
      },
    },
    {
      method: 'get', path: '/webhooks/{webhook_id}/deliveries', operationId: 'listWebhookDeliveries', tag: 'Webhooks',
      summary: 'Recent deliveries of a webhook (newest first): event, action, attempts, last status code and error',
      params: webhookIdPath,
      query: deliveriesQuery,
      responses: {
        200: { description: 'Deliveries', schema: { type: 'object', required: ['deliveries'], properties: { deliveries: { type: 'array', items: deliverySchema } } } },
      },
      async handle(ctx, { params, query }) {
        ctx.body = { deliveries: (await webhookDeliveries(services, accountOf(ctx.state), params.webhook_id, query.limit)).map(deliveryView) };
      },
    },
    {
      method: 'post', path: '/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver', operationId: 'redeliverWebhook', tag: 'Webhooks',
      summary: 'Send a delivery again, with the same delivery id (X-Service-Job-Id)',
      params: deliveryPath,
      responses: {
        202: { description: 'The delivery was started again', schema: deliverySchema },
        409: { description: '`delivery_in_progress`: the delivery is still being attempted' },
      },
      async handle(ctx, { params }) {
        const delivery = await redeliver(services, accountOf(ctx.state), params.webhook_id, params.delivery_id);
        ctx.status = 202;
        ctx.body = deliveryView(delivery);
      },
    },
  ];
}
