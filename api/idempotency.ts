/**
 * `Idempotency-Key` over HTTP: the header as OpenAPI shows it, the claim read from a request (its key and the
 * fingerprint of its path and body), and a repeat answered with the first response before any work is done. The
 * keys themselves are recorded by `src/idempotency/keys.ts`, in the transaction that accepts the action.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Context } from 'koa';
import { ValidationFailed } from '../src/errors';
import { awaitStartSettled, findReplay, type IdempotencyClaim, keyInFlight, type StoredResponse } from '../src/idempotency/keys';
import type { Caller, Services } from '../src/services';

const KEY_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export const idempotencyHeader = {
  name: 'Idempotency-Key',
  description: 'Optional. Latin letters, digits, `-`, `_`, `.`, `:`; up to 128 characters. A repeat within 5 minutes returns the first response.',
  schema: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$' },
};

/**
 * Feeds key-sorted JSON to `hash` piece by piece, so a body of large base64 images is never copied into one more
 * string of its size; recursive, but a body is at most MAX_JSON_DEPTH (32) deep by the time it gets here (json-body).
 */
function hashCanonical(hash: Hash, value: unknown): void {
  if (Array.isArray(value)) {
    hash.update('[');
    value.forEach((item, i) => {
      if (i > 0) hash.update(',');
      hashCanonical(hash, item);
    });
    hash.update(']');
  } else if (value && typeof value === 'object') {
    hash.update('{');
    Object.keys(value).sort().forEach((k, i) => {
      hash.update(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`);
      hashCanonical(hash, (value as Record<string, unknown>)[k]);
    });
    hash.update('}');
  } else {
    hash.update(JSON.stringify(value) ?? 'null');
  }
}

/** The fingerprint of a request: sha256 of its path, a newline and its key-sorted JSON body. */
function requestHashOf(path: string, body: unknown): string {
  const hash = createHash('sha256').update(`${path}\n`);
  hashCanonical(hash, body);
  return hash.digest('hex');
}

/** The claim for this request, or undefined when no key was sent; 422 for a malformed key. */
export function readIdempotencyKey(ctx: Context, accountId: number, scope: string, body: unknown): IdempotencyClaim | undefined {
  const key = ctx.get('Idempotency-Key');
  if (!key) return undefined;
  if (!KEY_PATTERN.test(key)) {
    throw new ValidationFailed([{
      loc: ['header', 'Idempotency-Key'], msg: 'must be 1-128 characters of A-Z, a-z, 0-9, "-", "_", ".", ":"', type: 'pattern',
    }]);
  }
  return { accountId, scope, key, requestHash: requestHashOf(ctx.path, body) };
}

/** Writes a stored (or fresh) response; a replay is marked so clients can tell. */
export function send(ctx: Context, response: StoredResponse, replayed?: boolean): void {
  ctx.status = response.status;
  ctx.body = response.body;
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
}

/**
 * Answers a repeat of an earlier request with the same Idempotency-Key before any work is done. Returns the
 * claim to submit with, and whether the response was already sent.
 */
export async function answerRepeat(
  services: Pick<Services, 'db' | 'temporal'>, ctx: Context, scope: string, body: unknown,
): Promise<{ claim?: IdempotencyClaim; done: boolean }> {
  const { db } = services;
  const claim = readIdempotencyKey(ctx, (ctx.state.caller as Caller).accountId, scope, body);
  let earlier = claim && (await findReplay(db, claim));
  if (earlier?.inFlight) {
    if (!(await awaitStartSettled(services, claim!))) throw keyInFlight();
    earlier = await findReplay(db, claim!);
  }
  if (earlier) send(ctx, earlier, true);
  return { claim, done: Boolean(earlier) };
}
