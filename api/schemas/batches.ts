/** Request bodies of catalogue batches: the envelope, and each item type's fields (its single request's body). */
import { ITEM_STATUSES, ITEM_TYPES, type ItemType } from '../../src/batches/store';
import { cardRequestSchema, photoRequestSchema, videoRequestSchema } from './generate';
import { ref } from './shared';

/** Items of a JSON body, and lines of an NDJSON one. */
export const MAX_JSON_ITEMS = 1_000;
export const MAX_NDJSON_ITEMS = 10_000;
/** The most a batch's body may weigh (either form): large catalogues send images by URL or upload id. */
export const MAX_BATCH_BODY_BYTES = 64 * 1024 * 1024;

export const EXTERNAL_ID = { type: 'string', minLength: 1, maxLength: 100, description: 'Your id of the item (a SKU), unique within the batch' };

/** The batch's own fields (in a JSON body; query parameters of an NDJSON one). */
const batchFields = {
  webhook_url: { ...ref('HttpsUrl'), description: 'Where `batch.completed` or `batch.failed` is sent when the batch ends (unsigned, as a single request\'s)' },
  item_events: { type: 'boolean', default: false, description: 'Send each item\'s own event (generation, edit or video) to `webhook_url` too' },
  max_sparks: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'The most the batch may hold and charge together; none: the available balance' },
  client_group_id: { type: 'string', maxLength: 100, description: 'Given to every item that names none' },
};

export const createBatchSchema = {
  type: 'object',
  required: ['items'],
  properties: {
    items: {
      type: 'array', minItems: 1, maxItems: MAX_NDJSON_ITEMS,
      description: `1-${MAX_JSON_ITEMS} items in a JSON body (up to ${MAX_NDJSON_ITEMS} lines as application/x-ndjson). Each is \`external_id\`, \`type\` and the body of that type's single request`,
      items: {},
    },
    ...batchFields,
  },
} as const;

export interface CreateBatchBody { items: Record<string, unknown>[]; max_sparks?: number; client_group_id?: string; webhook_url?: string; item_events?: boolean }

export const createBatchQuery = {
  type: 'object',
  properties: {
    partial: { type: 'boolean', default: false, description: 'Run the valid items and record the invalid ones as `invalid` (else one invalid item refuses the batch)' },
    ...batchFields,
  },
};

/** An item of each type: its single request's body without webhook_url (a batch's events are the batch's). */
const withoutWebhook = (schema: { required: readonly string[]; properties: Record<string, unknown> }) => {
  const { webhook_url: _webhook, ...properties } = schema.properties;
  return { required: [...schema.required], properties };
};

export const ITEM_SCHEMAS: Record<ItemType, { type: 'object'; required: string[]; properties: Record<string, unknown> }> = {
  photo: { type: 'object', ...withoutWebhook(photoRequestSchema) },
  card: { type: 'object', ...withoutWebhook(cardRequestSchema) },
  video: { type: 'object', ...withoutWebhook(videoRequestSchema) },
  edit: {
    type: 'object', required: ['action_id', 'instruction'],
    properties: {
      action_id: { type: 'integer', minimum: 1, maximum: 2147483647 }, instruction: { type: 'string', minLength: 1, maxLength: 1000 },
      client_group_id: { type: 'string', maxLength: 100 },
    },
  },
};

export const itemHeadSchema = {
  type: 'object', required: ['external_id', 'type'],
  properties: { external_id: EXTERNAL_ID, type: { type: 'string', enum: [...ITEM_TYPES] } },
};

const COUNTS = {
  type: 'object', description: 'Items per status',
  properties: Object.fromEntries(ITEM_STATUSES.map((status) => [status, { type: 'integer' }])),
};

export const batchSchema = {
  type: 'object',
  required: ['batch_id', 'status', 'items', 'counts', 'price', 'held', 'charged', 'max_sparks', 'created_at', 'started_at', 'completed_at', 'check_again_in_sec'],
  properties: {
    batch_id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['queued', 'running', 'completed', 'completed_with_errors', 'budget_exhausted', 'cancelled'] },
    items: { type: 'integer', description: 'Items in the batch, invalid ones included' },
    counts: COUNTS,
    price: { type: 'integer', description: 'The price of every valid item at creation' },
    held: { type: 'integer', description: 'Sparks its items hold now' },
    charged: { type: 'integer', description: 'Sparks its items were charged so far' },
    max_sparks: { type: ['integer', 'null'] },
    created_at: { type: 'string', format: 'date-time' },
    started_at: { type: ['string', 'null'], format: 'date-time' },
    completed_at: { type: ['string', 'null'], format: 'date-time' },
    check_again_in_sec: { type: ['integer', 'null'], description: 'Null once the batch has ended' },
    status_url: { type: 'string' }, items_url: { type: 'string' }, results_url: { type: 'string' },
  },
};

export const itemSchema = {
  type: 'object',
  required: ['external_id', 'position', 'type', 'status', 'phase', 'job_id', 'error_code', 'error_message', 'result_url', 'result_url_expires_at'],
  properties: {
    external_id: { type: ['string', 'null'], description: 'As sent; null only for an invalid item without a usable one' },
    position: { type: 'integer', description: 'Its place in the batch, from 1 (the `after` of the next page)' },
    type: { type: ['string', 'null'], enum: [...ITEM_TYPES, null], description: 'Null only for an invalid item of no known type' },
    status: { type: 'string', enum: [...ITEM_STATUSES] },
    phase: { type: ['string', 'null'], description: 'Its job\'s phase, once it has a job' },
    job_id: { type: ['string', 'null'], description: 'Its v2 job (`GET /jobs/{job_id}`), once it started' },
    error_code: { type: ['string', 'null'] },
    error_message: { type: ['string', 'null'] },
    result_url: { type: ['string', 'null'] },
    result_url_expires_at: { type: ['string', 'null'], format: 'date-time' },
  },
};
