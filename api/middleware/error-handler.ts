import type { Middleware } from 'koa';
import { databaseAway } from '../../src/db/sql';
import { log } from '../../src/log';
import { AppError, ValidationFailed } from '../../src/errors';

/** Seconds a request refused while the database is away is asked to wait. */
const DATABASE_AWAY_RETRY_SECONDS = 5;

const HTTP_CODES: Record<number, string> = { 404: 'not_found', 405: 'method_not_allowed', 501: 'not_implemented' };

/**
 * The one error middleware, at the top of the chain. Contract errors become `{detail: {...}}`, validation errors a
 * 422 `detail` array; anything unexpected is logged with the request id and answered with the bare root body, so
 * no stack, SQL or internal name ever leaks.
 */
export function errorHandler(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError(404, 'not_found', `No route for ${ctx.method} ${ctx.path}`);
    } catch (err) {
      if (err instanceof AppError) {
        ctx.status = err.status;
        if (err.headers) ctx.set(err.headers);
        ctx.body = { detail: { error: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } };
        return;
      }
      if (err instanceof ValidationFailed) {
        ctx.status = 422;
        ctx.body = { detail: err.issues };
        return;
      }
      const status = (err as { status?: number; expose?: boolean }).status;
      if (status && ((status >= 400 && status < 500 && (err as { expose?: boolean }).expose) || status === 501)) {
        // Errors raised by Koa or the router themselves (405 from allowedMethods, ...).
        ctx.status = status;
        ctx.body = { detail: { error: HTTP_CODES[status] ?? 'invalid_request', message: (err as Error).message } };
        return;
      }
      if (databaseAway(err)) {
        // A backing service (Postgres, or the object store's connection) is away: the request can be tried again.
        // Waiting too long for a free pooled connection reads the same, and may be a leak: logged as an error.
        const poolQueue = /timeout exceeded when trying to connect/i.test(String((err as Error).message));
        (poolQueue ? log.error : log.warn)('a backing service did not answer a request', { requestId: ctx.state.requestId, path: ctx.path, error: String(err) });
        ctx.status = 503;
        ctx.set('Retry-After', String(DATABASE_AWAY_RETRY_SECONDS));
        ctx.body = { detail: { error: 'generation_unavailable', message: 'The service is temporarily unavailable, try again shortly' } };
        return;
      }
      log.error('unhandled error', {
        requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, error: (err as Error)?.stack ?? String(err),
      });
      ctx.status = 500;
      ctx.body = { error: 'Internal server error' };
    }
  };
}
