/**
 * Whether tracing is on, and spans around the service's own work (outbound HTTP, provider calls), through
 * `@opentelemetry/api` only. When tracing is off the work runs as it is, without a span object or a context switch,
 * and the SDK (tracing.ts) is never loaded.
 */
import { context, propagation, type Attributes, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

const TRACER_NAME = 'product-imagery-service';
/** The baggage entry, and the span attribute, that carry the API's request id along an action. */
export const REQUEST_ID_KEY = 'request.id';

/** What tracing.ts installed: the span processor and resource that the Temporal worker's workflow-span sink needs. */
export interface Tracing {
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Flushes what is buffered and uninstalls (the process's shutdown; the tests). */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;
let on = false;

/** Set by installTracing (tracing.ts): this module, loaded by every process, never loads the SDK. */
export function markInstalled(value: Tracing | undefined): void {
  installed = value;
  on = value !== undefined;
}

/** The installed tracing, or undefined when tracing is off. */
export function tracing(): Tracing | undefined {
  return installed;
}

export function tracingOn(): boolean {
  return on;
}

export function tracer() {
  return trace.getTracer(TRACER_NAME);
}

/**
 * What a span says of a failure: the error's code (a provider's failure class, `rate_limited`; a socket's `ECONNRESET`)
 * or else its class name. Never its message, which may hold a provider's text (an echo of the prompt), a URL with a
 * token, or anything else from outside; the action's own record keeps the message.
 */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
  return err instanceof Error ? err.name : typeof err;
}

/** Runs `work` in a span of its own (a child of the active one); a thrown error marks the span failed (`errorType`) and goes on. */
export async function inSpan<T>(name: string, options: { kind?: SpanKind; attributes?: Attributes }, work: (span?: Span) => Promise<T>): Promise<T> {
  if (!on) return work();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      const type = errorType(err);
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: type });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The trace, span and request id of the active span, for log lines; undefined when there is none. */
export function activeTraceFields(): Record<string, string> | undefined {
  if (!on) return undefined;
  const active = context.active();
  const spanContext = trace.getSpan(active)?.spanContext();
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  const requestId = propagation.getBaggage(active)?.getEntry(REQUEST_ID_KEY)?.value;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId, ...(requestId ? { requestId } : {}) };
}

export { SpanKind };
