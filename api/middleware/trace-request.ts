import type { Middleware } from 'koa';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { REQUEST_ID_KEY, tracer } from '../../src/telemetry/spans';

/**
 * A server span per request (installed only with tracing on), named by the route's template once the router has
 * matched it (`POST /api/v1/generate/photo`, `GET /api/v2/jobs/:job_id`), never by the path with its ids; a path no
 * route matches is named by its method alone. The request id is an attribute of the span and the one entry of the
 * trace's baggage, so that the workflow, its activities and their log lines carry it. Each request starts a trace of
 * its own: a caller's `traceparent` and `baggage` are not taken (a public API's callers do not set our sampling or
 * our request ids).
 */
// Attribute names are OpenTelemetry's stable HTTP semantic conventions.
export function traceRequest(): Middleware {
  return async (ctx, next) => {
    const requestId: string = ctx.state.requestId;
    const span = tracer().startSpan(ctx.method, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': ctx.method, [REQUEST_ID_KEY]: requestId },
    }, ROOT_CONTEXT);
    const baggage = propagation.createBaggage({ [REQUEST_ID_KEY]: { value: requestId } });
    try {
      await context.with(propagation.setBaggage(trace.setSpan(ROOT_CONTEXT, span), baggage), next);
    } finally {
      const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      if (typeof route === 'string') {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', ctx.status);
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
