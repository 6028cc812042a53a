/**
 * Verifying a webhook delivery: `X-Service-Signature: sha256=<hex>` is the HMAC-SHA256 of the body exactly as sent,
 * keyed with the webhook's secret. Web Crypto only (Node 20 and browsers, edge runtimes), compared in constant time.
 */
import { WebhookVerificationError } from './errors.js';

/** A delivery's body (the contract's webhook payload). Status and result are read with `GET /status/{action_id}`. */
export interface WebhookPayload {
  action_id: number;
  project_id: number;
  card_id: number;
  type: 'generate' | 'edit' | 'video';
  client_group_id?: string;
}

export interface VerifiedWebhook {
  /** `X-Service-Event`: `generation.completed`, `video.failed`, ... */
  event: string;
  /** `X-Service-Job-Id`: the same on every attempt of one delivery; deduplicate on it. */
  deliveryId: string;
  payload: WebhookPayload;
}

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookInput {
  /** The request body exactly as received: a string or bytes, never a parsed object (see the README's examples). */
  rawBody: string | Uint8Array | ArrayBuffer;
  /** The request's headers (a `Headers`, or Node's `IncomingHttpHeaders`). */
  headers: WebhookHeaders;
  /** The webhook's secret (`whsec_...`), as `POST /webhooks` answered it. */
  secret: string;
}

const NOT_RAW = 'rawBody must be the request body exactly as received (a string or bytes); this one was parsed into an '
  + 'object, and serialising it again does not give back the bytes that were signed. Read the raw body: '
  + 'express.raw({ type: "application/json" }), `await request.text()` in a Next.js route handler, or the raw body of '
  + 'your Koa body parser (see the client\'s README).';

/** Checks a delivery's signature and answers its event, delivery id and payload; throws `WebhookVerificationError` otherwise. */
export async function verifyWebhook({ rawBody, headers, secret }: VerifyWebhookInput): Promise<VerifiedWebhook> {
  const body = bytesOf(rawBody);
  if (!secret) throw new WebhookVerificationError('no secret given: pass the webhook\'s secret (whsec_...)');
  const sent = header(headers, 'x-service-signature');
  const hex = /^sha256=([0-9a-f]{64})$/i.exec(sent ?? '')?.[1];
  if (!hex) throw new WebhookVerificationError(sent ? 'X-Service-Signature is not sha256=<64 hex digits>' : 'no X-Service-Signature header: not a signed delivery (ad-hoc webhook_url deliveries are not signed)');
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const signature = Uint8Array.from(hex.match(/../g)!, (byte) => parseInt(byte, 16));
  if (!await crypto.subtle.verify('HMAC', key, signature, body)) { // Web Crypto compares in constant time
    throw new WebhookVerificationError('the signature does not match this body and secret: check the secret, and that the body '
      + 'is the raw bytes received, not parsed and serialised again by a body parser');
  }
  let payload: WebhookPayload;
  try {
    payload = JSON.parse(new TextDecoder().decode(body)) as WebhookPayload;
  } catch {
    throw new WebhookVerificationError('the signed body is not JSON');
  }
  return { event: header(headers, 'x-service-event') ?? '', deliveryId: header(headers, 'x-service-job-id') ?? '', payload };
}

function bytesOf(rawBody: unknown): Uint8Array<ArrayBuffer> {
  if (typeof rawBody === 'string') return new TextEncoder().encode(rawBody);
  if (rawBody instanceof Uint8Array) return new Uint8Array(rawBody); // Node's Buffer too
  if (rawBody instanceof ArrayBuffer) return new Uint8Array(rawBody);
  throw new TypeError(NOT_RAW);
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}
