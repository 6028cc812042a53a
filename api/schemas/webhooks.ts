/**
 * Registered webhooks and their deliveries on the wire, for the public API's routes and the dashboard's alike: the
 * bodies they take, the shapes they answer, and the views that make those shapes from store rows.
 */
import { WEBHOOK_EVENTS } from '../../src/webhooks/events';
import type { DeliveryRow, WebhookRow } from '../../src/webhooks/store';
import { iso } from '../representations';

export const webhookIdPath = {
  type: 'object', required: ['webhook_id'], properties: { webhook_id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
};

export const deliveryPath = {
  type: 'object', required: ['webhook_id', 'delivery_id'],
  properties: { webhook_id: webhookIdPath.properties.webhook_id, delivery_id: { type: 'string', format: 'uuid' } },
};

export const registerWebhookSchema = {
  type: 'object', required: ['url'],
  properties: {
    url: { type: 'string', maxLength: 2000 },
    events: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 100 }, description: 'Default: all events' },
    item_events: { type: 'boolean', default: false, description: 'Also the events of batches\' items (each item\'s generation, edit or video event); a batch\'s own end is `batch.completed` or `batch.failed`' },
  },
};
export interface RegisterWebhookRequest { url: string; events?: string[]; item_events?: boolean }

export const deliveriesQuery = { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 } } };

export const webhookSchema = (withSecret: boolean) => ({
  type: 'object',
  required: ['id', 'url', 'events', 'is_active', 'created_at', ...(withSecret ? ['secret'] : ['updated_at'])],
  properties: {
    id: { type: 'integer' },
    url: { type: 'string' },
    ...(withSecret ? { secret: {
      type: 'string', pattern: '^whsec_',
      description: '`whsec_` and 24 random bytes in standard base64. Shown only here; keep it to verify signatures '
        + '(X-Service-Signature and the Standard Webhooks webhook-signature)',
    } } : {}),
    events: { type: 'array', items: { type: 'string', enum: [...WEBHOOK_EVENTS] } },
    item_events: { type: 'boolean', description: 'Whether it takes the events of batches\' items' },
    is_active: { type: 'boolean' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
});

export const deliverySchema = {
  type: 'object',
  required: ['delivery_id', 'event', 'action_id', 'status', 'attempts', 'max_attempts', 'created_at'],
  properties: {
    delivery_id: { type: 'string', format: 'uuid', description: 'Also the X-Service-Job-Id and webhook-id headers of every attempt' },
    event: { type: 'string' },
    action_id: { type: ['integer', 'null'], description: 'The action whose outcome it announces; null for a batch\'s event' },
    batch_id: { type: ['string', 'null'], description: 'The batch whose end it announces (`batch.completed`, `batch.failed`)' },
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

/** A webhook as the API shows it (never its secret: the registration adds it to its own answer). */
export const webhookView = (w: WebhookRow) => ({
  id: w.id, url: w.url, events: w.events, item_events: w.item_events, is_active: w.is_active, created_at: iso(w.created_at),
  ...(w.updated_at ? { updated_at: iso(w.updated_at) } : {}),
});

/** A delivery as the API shows it. */
export const deliveryView = ({ id, ...r }: DeliveryRow) => ({
  delivery_id: id, ...r, last_attempt_at: iso(r.last_attempt_at), delivered_at: iso(r.delivered_at), created_at: iso(r.created_at),
});
