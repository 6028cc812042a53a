import type { Context, Middleware } from 'koa';
import type { DataSource } from 'typeorm';
import { rateLimited } from '../../src/metrics/registry';
import { RATE_LIMIT_WINDOW_SECONDS } from '../../src/housekeeping/retention';
import { AppError } from '../../src/errors';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';

/**
 * A request counted in its key's window (the fixed window of RATE_LIMIT_WINDOW_SECONDS that the database's clock,
 * `nowSeconds`, falls in): `used` is its number there, this request included.
 */
export interface CountedRequest {
  window: number;
  used: number;
  nowSeconds: number;
}

/**
 * Per-key fixed-window limit, counted in Postgres so that it holds across any number of API processes: an upsert on
 * an UNLOGGED table, made by `authenticate` in the statement that finds the key (one per request, or one per batch
 * of a busy key's requests, see CountedKeyLookup). This answers it: every authenticated response carries the
 * X-RateLimit-* headers, and a request past the limit is 429.
 */
export function rateLimit({ db, config }: ApiServices): Middleware {
  return async (ctx, next) => {
    answerRateLimit(ctx, db, config.rateLimitPerMinute, (ctx.state.caller as Caller).keyId, ctx.state.counted as CountedRequest);
    await next();
  };
}

/**
 * Sets the X-RateLimit-* headers of a request counted in its key's window, and refuses it (429) past the limit; the
 * public API's middleware and the dashboard's Try it alike.
 */
export function answerRateLimit(ctx: Context, db: DataSource, limit: number, keyId: number, { window, used, nowSeconds }: CountedRequest): void {
  const resetAt = (window + 1) * RATE_LIMIT_WINDOW_SECONDS;
  ctx.set('X-RateLimit-Limit', String(limit));
  ctx.set('X-RateLimit-Remaining', String(Math.max(0, limit - used)));
  ctx.set('X-RateLimit-Reset', String(resetAt));
  if (used === 1) {
    // First request of a new window for this key: drop the key's old windows (cheap, indexed, rare).
    void db.query('DELETE FROM rate_limit_windows WHERE key_id = $1 AND window_start < $2', [keyId, window]).catch(() => undefined);
  }
  if (used > limit) {
    rateLimited.inc();
    ctx.set('Retry-After', String(Math.max(1, Math.ceil(resetAt - nowSeconds))));
    throw new AppError(429, 'rate_limit_exceeded', `Rate limit of ${limit} requests per minute exceeded`, {
      limit, reset_at: new Date(resetAt * 1000).toISOString(),
    });
  }
}
