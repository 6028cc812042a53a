import type { Middleware } from 'koa';
import { sqlRow } from '../../src/db/sql';
import { AppError } from '../errors';
import type { ApiServices, Caller } from '../services';

const WINDOW_SECONDS = 60;

/**
 * Per-key fixed-window limit, counted in Postgres so that it holds across any number of API processes: one
 * upsert per request on an UNLOGGED table. Every authenticated response carries the X-RateLimit-* headers.
 */
export function rateLimit({ db, config }: ApiServices): Middleware {
  const limit = config.rateLimitPerMinute;
  return async (ctx, next) => {
    const caller = ctx.state.caller as Caller;
    const nowSeconds = Date.now() / 1000;
    const window = Math.floor(nowSeconds / WINDOW_SECONDS);
    const resetAt = (window + 1) * WINDOW_SECONDS;
    const row = await sqlRow<{ count: number }>(db.manager,
      `INSERT INTO rate_limit_windows AS w (key_id, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key_id, window_start) DO UPDATE SET count = w.count + 1
       RETURNING count`, [caller.keyId, window]);
    const used = row!.count;
    ctx.set('X-RateLimit-Limit', String(limit));
    ctx.set('X-RateLimit-Remaining', String(Math.max(0, limit - used)));
    ctx.set('X-RateLimit-Reset', String(resetAt));
    if (used === 1) {
      // First request of a new window for this key: drop the key's old windows (cheap, indexed, rare).
      void db.query('DELETE FROM rate_limit_windows WHERE key_id = $1 AND window_start < $2', [caller.keyId, window]).catch(() => undefined);
    }
    if (used > limit) {
      ctx.set('Retry-After', String(Math.max(1, Math.ceil(resetAt - nowSeconds))));
      throw new AppError(429, 'rate_limit_exceeded', `Rate limit of ${limit} requests per minute exceeded`, {
        limit, reset_at: new Date(resetAt * 1000).toISOString(),
      });
    }
    await next();
  };
}
