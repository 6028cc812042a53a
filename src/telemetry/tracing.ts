/**
 * OpenTelemetry tracing of the whole path of an action (HTTP request, workflow start, workflow, activities,
 * provider calls, webhook deliveries), installed once per process when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. When it
 * is not, nothing is installed nor loaded: this module (the SDK, the exporter) and Temporal's interceptors are
 * required only when it is on, and spans.ts and log.ts check one flag.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { markInstalled, tracing, type Tracing } from './spans';

export { tracing, type Tracing };

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
  if (tracing()) throw new Error('tracing is installed already');
  const resource = new Resource({ [ATTR_SERVICE_NAME]: options.serviceName });
  const exporter = options.exporter ?? new OTLPTraceExporter({ url: `${options.otlpEndpoint!.replace(/\/+$/, '')}/v1/traces` });
  const spanProcessor = options.spanProcessor ? options.spanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  provider.register({
    contextManager,
    propagator: new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  });
  const installed: Tracing = {
    resource,
    spanProcessor,
    async shutdown() {
      markInstalled(undefined);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  markInstalled(installed);
  return installed;
}
