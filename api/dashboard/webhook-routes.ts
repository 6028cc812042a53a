/**
 * The account's registered webhooks in the dashboard: register one (its `whsec_` secret in that answer only), switch
 * it on or off, delete it, read its delivery log and send a delivery again. The same use cases as the public API's
 * (src/webhooks/management.ts); a webhook of another account answers 404, as an unknown one does.
 */
import { WEBHOOK_EVENTS } from '../../src/webhooks/events';
import {
  deleteAccountWebhook, redeliver, registerAccountWebhook, switchWebhook, webhookDeliveries,
} from '../../src/webhooks/management';
import { listWebhooks } from '../../src/webhooks/store';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import {
  deliveriesQuery, deliveryPath, deliverySchema, deliveryView, registerWebhookSchema, webhookIdPath, webhookSchema, webhookView,
} from '../schemas/webhooks';
import { dashboardRoute, hidingOtherAccounts } from './session-guard';

export function webhookRoutes(services: ApiServices): Route[] {
  const hook = (id: number) => `Webhook ${id}`;
  return [
    dashboardRoute({
      method: 'get', path: '/webhooks', operationId: 'listWebhooks', access: 'member', summary: 'The account\'s webhooks and the events one can subscribe to',
      responses: {
        200: {
          description: 'Webhooks',
          schema: {
            type: 'object', required: ['webhooks', 'events'],
            properties: { webhooks: { type: 'array', items: webhookSchema(false) }, events: { type: 'array', items: { type: 'string' } } },
          },
        },
      },
      async handle(ctx, { user }) {
        ctx.body = { webhooks: (await listWebhooks(services.db, user.accountId)).map(webhookView), events: WEBHOOK_EVENTS };
      },
    }),
    dashboardRoute({
      method: 'post', path: '/webhooks', operationId: 'registerWebhook', access: 'member', summary: 'Register a webhook: its secret is in this answer only',
      body: { ...registerWebhookSchema, additionalProperties: false },
      responses: { 201: { description: 'The webhook with its secret', schema: webhookSchema(true) }, 422: { description: 'A URL or event refused, or 5 webhooks already' } },
      async handle(ctx, { body, user }) {
        const { secret, ...created } = await registerAccountWebhook(services, user.accountId, body);
        ctx.status = 201;
        ctx.body = { ...webhookView(created), secret };
      },
    }),
    dashboardRoute({
      method: 'patch', path: '/webhooks/{webhook_id}', operationId: 'switchWebhook', access: 'member',
      summary: 'Switch a webhook on or off (off: nothing is delivered to it, pending retries included)',
      params: webhookIdPath,
      body: { type: 'object', required: ['is_active'], additionalProperties: false, properties: { is_active: { type: 'boolean' } } },
      responses: { 200: { description: 'The webhook', schema: webhookSchema(false) }, 404: { description: '`not_found`' } },
      async handle(ctx, { params, body, user }) {
        ctx.body = webhookView(await hidingOtherAccounts(switchWebhook(services, user.accountId, params.webhook_id, body.is_active), hook(params.webhook_id)));
      },
    }),
    dashboardRoute({
      method: 'delete', path: '/webhooks/{webhook_id}', operationId: 'deleteWebhook', access: 'member', summary: 'Delete a webhook',
      params: webhookIdPath,
      responses: { 204: { description: 'Deleted' }, 404: { description: '`not_found`' } },
      async handle(ctx, { params, user }) {
        await hidingOtherAccounts(deleteAccountWebhook(services, user.accountId, params.webhook_id), hook(params.webhook_id));
        ctx.status = 204;
      },
    }),
    dashboardRoute({
      method: 'get', path: '/webhooks/{webhook_id}/deliveries', operationId: 'listDeliveries', access: 'member',
      summary: 'A webhook\'s delivery log, newest first: event, action, attempts, last response code and error, timings',
      params: webhookIdPath,
      query: deliveriesQuery,
      responses: {
        200: { description: 'Deliveries', schema: { type: 'object', required: ['deliveries'], properties: { deliveries: { type: 'array', items: deliverySchema } } } },
        404: { description: '`not_found`' },
      },
      async handle(ctx, { params, query, user }) {
        const rows = await hidingOtherAccounts(webhookDeliveries(services, user.accountId, params.webhook_id, query.limit), hook(params.webhook_id));
        ctx.body = { deliveries: rows.map(deliveryView) };
      },
    }),
    dashboardRoute({
      method: 'post', path: '/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver', operationId: 'redeliver', access: 'member',
      summary: 'Send a delivery again, with the same delivery id',
      params: deliveryPath,
      responses: {
        202: { description: 'The delivery was started again', schema: deliverySchema },
        404: { description: '`not_found`' }, 409: { description: '`delivery_in_progress`' },
      },
      async handle(ctx, { params, user }) {
        const delivery = await hidingOtherAccounts(redeliver(services, user.accountId, params.webhook_id, params.delivery_id), hook(params.webhook_id));
        ctx.status = 202;
        ctx.body = deliveryView(delivery);
      },
    }),
  ];
}
