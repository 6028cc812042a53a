/**
 * OpenTelemetry tracing of the whole path of an action (HTTP request, workflow start, workflow, activities,
 * provider calls, webhook deliveries), installed once per process when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. When it
 * is not, nothing is installed: no provider, no context manager, no Temporal interceptors, and the `@opentelemetry/api`
 * calls of spans.ts and log.ts answer from its no-op defaults.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { markTracingOn } from './spans';

export interface Tracing {
  resource: Resource;
  /** What the Temporal worker's workflow-span sink hands finished workflow spans to. */
  spanProcessor: SpanProcessor;
  /** Flushes what is buffered and uninstalls (the process's shutdown; the tests). */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/** The installed tracing, or undefined when tracing is off. */
export function tracing(): Tracing | undefined {
  return installed;
}

export interface TracingOptions {
  serviceName: string;
  /** OTLP over HTTP (protobuf) to `<endpoint>/v1/traces`, batched; or, in tests, an exporter and processor of their own. */
  otlpEndpoint?: string;
  spanProcessor?: (exporter?: SpanExporter) => SpanProcessor;
  exporter?: SpanExporter;
}

/**
 * Installs the process's tracer provider (globally: the Temporal interceptors use the global tracer), an
 * AsyncLocalStorage context manager (the active span follows awaits) and the W3C trace-context and baggage
 * propagators (the request id rides in baggage through Temporal's headers). Once per process.
 */
export function installTracing(options: TracingOptions): Tracing {
  if (installed) throw new Error('tracing is installed already');
  const resource = new Resource({ [ATTR_SERVICE_NAME]: options.serviceName, [ATTR_SERVICE_VERSION]: process.env.npm_package_version ?? '0.1.0' });
  const exporter = options.exporter ?? new OTLPTraceExporter({ url: `${options.otlpEndpoint!.replace(/\/+$/, '')}/v1/traces` });
  const spanProcessor = options.spanProcessor ? options.spanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  provider.register({
    contextManager,
    propagator: new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  });
  markTracingOn(true);
  installed = {
    resource,
    spanProcessor,
    async shutdown() {
      markTracingOn(false);
      installed = undefined;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  return installed;
}
