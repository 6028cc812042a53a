/**
 * Times every request into imagery_http_request_duration_seconds, labelled by the router's template path
 * (`/api/v1/public/status/:action_id`, never the raw URL, so the label set stays bounded), method and final status;
 * counts answers replayed from an Idempotency-Key. Outermost, so that the error handler's status is the one seen.
 */
import type { Middleware } from 'koa';
import { httpRequestDuration, idempotentReplays } from '../../src/metrics/registry';

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/**
 * The route label: the matched template; `/assets/*` for the asset paths; `<prefix>/*` for a request under a route
 * group's prefix that no route took (refused before routing: no key, rate limit; or no such route); else `unmatched`.
 */
function routeOf(ctx: Parameters<Middleware>[0], prefixes: string[]): string {
  const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
  if (typeof matched === 'string') return matched;
  if (ctx.path.startsWith('/assets/')) return '/assets/*';
  const prefix = prefixes.find((p) => ctx.path.startsWith(`${p}/`));
  return prefix ? `${prefix}/*` : 'unmatched';
}

export function requestMetrics(groupPrefixes: string[]): Middleware {
  const prefixes = [...groupPrefixes].filter(Boolean).sort((a, b) => b.length - a.length);
  return async (ctx, next) => {
    const end = httpRequestDuration.startTimer();
    try {
      await next();
    } finally {
      const route = routeOf(ctx, prefixes);
      end({ method: METHODS.has(ctx.method) ? ctx.method : 'OTHER', route, status: String(ctx.status) });
      if (ctx.response.get('Idempotent-Replayed') === 'true') idempotentReplays.inc({ route });
    }
  };
}
