/**
 * Verifying a webhook delivery of a registered webhook. Two signatures, both checked:
 * - `X-Service-Signature: sha256=<hex>` (the contract's): HMAC-SHA256 of the body exactly as sent, keyed with the
 *   secret's text. It covers the body only.
 * - `webhook-signature: v1,<base64>` ([Standard Webhooks](https://www.standardwebhooks.com)): HMAC-SHA256 of
 *   `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the secret's bytes (base64 after `whsec_`). It signs the
 *   delivery id and the moment of the attempt, so a captured delivery replayed later, or with another id, is refused.
 * `X-Service-Event` is signed by neither: the payload's `type` and `GET /status/{action_id}` say what happened.
 * Web Crypto only (Node 20 and browsers, edge runtimes); every comparison is Web Crypto's, in constant time.
 */
import { WebhookVerificationError } from './errors.js';

/** A delivery's body (the contract's webhook payload). Status and result are read with `GET /status/{action_id}`. */
export interface WebhookPayload {
  action_id: number;
  project_id: number;
  card_id: number;
  type: 'generate' | 'edit' | 'video';
  client_group_id?: string;
  /** False for the work of a sandbox key (`ak_test_`). */
  livemode: boolean;
}

export interface VerifiedWebhook {
  /** `X-Service-Event`: `generation.completed`, `video.failed`, ... (not signed: see the module's note). */
  event: string;
  /** The signed `webhook-id` (= `X-Service-Job-Id`): the same on every attempt of one delivery; deduplicate on it. */
  deliveryId: string;
  /** The signed `webhook-timestamp` of this attempt; null for a delivery accepted with `allowUnstamped`. */
  sentAt: Date | null;
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
  /** How far `webhook-timestamp` may be from this clock, in seconds (default 300): an older delivery is a replay. */
  toleranceSeconds?: number;
  /**
   * Accept a delivery that carries no `webhook-signature` (the body signature alone; no protection against a replay,
   * and `deliveryId` unsigned). Off by default: every registered delivery carries both.
   */
  allowUnstamped?: boolean;
}

const NOT_RAW = 'rawBody must be the request body exactly as received (a string or bytes); this one was parsed into an '
  + 'object, and serialising it again does not give back the bytes that were signed. Read the raw body: '
  + 'express.raw({ type: "application/json" }), `await request.text()` in a Next.js route handler, or the raw body of '
  + 'your Koa body parser (see the client\'s README).';

/** Checks a delivery's signature and answers its event, delivery id and payload; throws `WebhookVerificationError` otherwise. */
export async function verifyWebhook({ rawBody, headers, secret, toleranceSeconds = 300, allowUnstamped = false }: VerifyWebhookInput): Promise<VerifiedWebhook> {
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
  const stamp = await verifyStandardSignature(body, headers, secret, toleranceSeconds, allowUnstamped);
  let payload: WebhookPayload;
  try {
    payload = JSON.parse(new TextDecoder().decode(body)) as WebhookPayload;
  } catch {
    throw new WebhookVerificationError('the signed body is not JSON');
  }
  return {
    event: header(headers, 'x-service-event') ?? '', deliveryId: stamp?.id ?? header(headers, 'x-service-job-id') ?? '',
    sentAt: stamp ? new Date(stamp.seconds * 1000) : null, payload,
  };
}

/** Checks `webhook-signature` over `<webhook-id>.<webhook-timestamp>.<body>`; answers the signed id and time (none: unstamped, allowed). */
async function verifyStandardSignature(
  body: Uint8Array<ArrayBuffer>, headers: WebhookHeaders, secret: string, toleranceSeconds: number, allowUnstamped: boolean,
): Promise<{ id: string; seconds: number } | undefined> {
  const signatures = header(headers, 'webhook-signature');
  if (!signatures) {
    if (allowUnstamped) return undefined;
    throw new WebhookVerificationError('no webhook-signature header: a registered webhook\'s delivery carries one (pass allowUnstamped: true to '
      + 'accept the body signature alone, without protection against replays)');
  }
  const id = header(headers, 'webhook-id');
  const stamp = header(headers, 'webhook-timestamp');
  if (!id || !stamp || !/^\d{1,12}$/.test(stamp)) throw new WebhookVerificationError('webhook-id and webhook-timestamp (unix seconds) must come with webhook-signature');
  const jobId = header(headers, 'x-service-job-id');
  if (jobId !== undefined && jobId !== id) throw new WebhookVerificationError('webhook-id and X-Service-Job-Id differ');
  const seconds = Number(stamp);
  const skew = Math.abs(Date.now() / 1000 - seconds);
  if (skew > toleranceSeconds) throw new WebhookVerificationError(`webhook-timestamp is ${Math.round(skew)} s from this clock (over ${toleranceSeconds}): a replayed delivery, or a clock that is off`);
  const keyBytes = base64Bytes(secret.replace(/^whsec_/, ''));
  if (!keyBytes || keyBytes.length === 0) throw new WebhookVerificationError('the secret is not whsec_ followed by base64');
  const key = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const prefix = new TextEncoder().encode(`${id}.${stamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    const mac = version === 'v1' && value ? base64Bytes(value) : undefined;
    if (mac && await crypto.subtle.verify('HMAC', key, mac, signed)) return { id, seconds };
  }
  throw new WebhookVerificationError('webhook-signature does not match this id, timestamp, body and secret');
}

/** Bytes of standard or URL-safe base64; undefined when it is neither. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
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
