/** Webhook events, payloads and signatures: the contract's "Events" section in code. */
import { createHmac, randomBytes } from 'node:crypto';
import { ACTION_TYPES, type ActionType } from '../db/entities/action';

export const WEBHOOK_EVENTS = [
  'generation.completed', 'generation.failed', 'edit.completed', 'edit.failed', 'video.completed', 'video.failed',
  'batch.completed', 'batch.failed',
] as const;

/** A batch that ran every item (`completed`, `completed_with_errors`) is `batch.completed`; one that stopped before is `batch.failed`. */
export const batchEvent = (status: string): 'batch.completed' | 'batch.failed' =>
  (status === 'completed' || status === 'completed_with_errors' ? 'batch.completed' : 'batch.failed');
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const MAX_WEBHOOKS = 5;
export const REGISTERED_ATTEMPTS = 5;
export const AD_HOC_ATTEMPTS = 3;
/** The whole exchange with a receiver, connect to the end of its answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of a receiver's 2xx answer is read (and ignored) before the connection is dropped. */
export const DELIVERY_ANSWER_MAX_BYTES = 64 * 1024;

const EVENT_PREFIX: Record<ActionType, string> = { generate: 'generation', edit: 'edit', video: 'video' };

export function eventFor(type: ActionType, outcome: 'completed' | 'failed'): WebhookEvent {
  return `${EVENT_PREFIX[type]}.${outcome}` as WebhookEvent;
}

/** Every action type's event by outcome (`EVENTS_BY_TYPE.generate.completed`), for statements that pick it by row. */
export const EVENTS_BY_TYPE: Record<ActionType, Record<'completed' | 'failed', WebhookEvent>> = Object.fromEntries(
  ACTION_TYPES.map((type) => [type, { completed: eventFor(type, 'completed'), failed: eventFor(type, 'failed') }]),
) as Record<ActionType, Record<'completed' | 'failed', WebhookEvent>>;

/** EVENTS_BY_TYPE as a statement's jsonb parameter (`$n::jsonb -> type ->> status`). */
export const EVENTS_BY_TYPE_JSON = JSON.stringify(EVENTS_BY_TYPE);

const SECRET_PREFIX = 'whsec_';

/**
 * A new webhook secret: `whsec_` and 24 random bytes in standard base64 (32 characters, no padding), the form the
 * Standard Webhooks libraries decode. Secrets made before were base64url, which those libraries refuse when they
 * hold a `-` or `_`; they still sign both ways (standardWebhookKey reads either alphabet).
 */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(24).toString('base64')}`;
}

/** `sha256=<hex HMAC-SHA256 of the raw body>` keyed with the webhook's secret (the whole string, prefix included). */
export function signature(secret: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/**
 * The Standard Webhooks key of a secret: what follows `whsec_`, base64-decoded. Buffer's decoder reads the standard
 * and the URL-safe alphabet alike, so a secret made before the standard alphabet gives the same bytes a receiver
 * gets after turning its `-` into `+` and `_` into `/`.
 */
export function standardWebhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/**
 * The Standard Webhooks headers of one attempt (https://www.standardwebhooks.com): `webhook-id`, the same on every
 * attempt of a delivery; `webhook-timestamp`, this attempt's unix seconds; and, given a secret, `webhook-signature`,
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">` keyed with standardWebhookKey. Without a secret (an
 * ad-hoc webhook_url, unsigned by the contract) there is no signature.
 */
export function standardWebhookHeaders(id: string, timestampSeconds: number, rawBody: string, secret?: string): Record<string, string> {
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds) };
  if (secret !== undefined) {
    const mac = createHmac('sha256', standardWebhookKey(secret)).update(`${id}.${timestampSeconds}.${rawBody}`).digest('base64');
    headers['webhook-signature'] = `v1,${mac}`;
  }
  return headers;
}

/** The payload of `batch.completed` and `batch.failed`: the batch as `GET /api/v2/batches/{id}` counts it when it ended. */
export interface BatchWebhookPayload {
  batch_id: string;
  status: string;
  items: number;
  counts: Record<string, number>;
  price: number;
  charged: number;
  client_group_id?: string;
  livemode: boolean;
}

export interface WebhookPayload {
  action_id: number;
  project_id: number;
  card_id: number;
  type: ActionType;
  client_group_id?: string;
  /** False for the work of a sandbox (test) key. */
  livemode: boolean;
}

/** Status codes after which a delivery is not tried again: 4xx except 408, 409 and 429. */
export function isPermanentRefusal(status: number): boolean {
  return status >= 400 && status < 500 && ![408, 409, 429].includes(status);
}
