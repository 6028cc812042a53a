import { Client, Connection } from '@temporalio/client';
import type * as OtelClient from '@temporalio/interceptors-opentelemetry/lib/client';
import { tracingOn } from '../telemetry/spans';

/**
 * A client of `namespace`. With tracing on, each workflow start, signal, query, cancel is a span, and a start carries
 * the active trace (and its baggage: the API's request id) in the workflow's headers.
 */
export async function connectClient(address: string, namespace: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  const interceptors = tracingOn() // the interceptor's module is loaded only with tracing on
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ? { workflow: [new (require('@temporalio/interceptors-opentelemetry/lib/client') as typeof OtelClient).OpenTelemetryWorkflowClientInterceptor()] }
    : undefined;
  return new Client({ connection, namespace, ...(interceptors ? { interceptors } : {}) });
}
