import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import type * as OtelClient from '@temporalio/interceptors-opentelemetry/lib/client';
import type { NativeConnection } from '@temporalio/worker';
import { tracingOn } from '../telemetry/spans';

/** The client's own connection (`@grpc/grpc-js`), or its workers' native one, shared, with eager starts on its queue. */
export type ClientSetup = { shared?: undefined; eagerStartsOn?: undefined } | {
  /**
   * The connection of this process's workers, shared instead of opening one of the client's own: its calls go
   * through the SDK's native core (measured: the client's CPU per start 1.5 ms instead of 2.7), and eager starts
   * need it (the SDK refuses them on any other connection).
   */
  shared: NativeConnection;
  /**
   * A task queue this process's own worker serves: each start of a workflow there asks for eager start. The core
   * first reserves a workflow task slot of that worker (its tuner decides, as for a poll); with one, the server
   * answers the start with the workflow's first task, which the worker runs at once, with no trip through the
   * server's matching service (measured on the dev server with one-task workflows: its CPU per workflow 28 ms
   * instead of 46); without one the start is an ordinary one.
   */
  eagerStartsOn?: string;
};

/**
 * A client of `namespace`. With tracing on, each workflow start, signal, query, cancel is a span, and a start carries
 * the active trace (and its baggage: the API's request id) in the workflow's headers.
 */
export async function connectClient(address: string, namespace: string, setup: ClientSetup = {}): Promise<Client> {
  const connection = setup.shared ?? await Connection.connect({ address });
  const workflow: WorkflowClientInterceptor[] = [];
  if (setup.eagerStartsOn !== undefined) workflow.push(eagerStarts(setup.eagerStartsOn));
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the interceptor's module is loaded only with tracing on
  if (tracingOn()) workflow.push(new (require('@temporalio/interceptors-opentelemetry/lib/client') as typeof OtelClient).OpenTelemetryWorkflowClientInterceptor());
  return new Client({ connection, namespace, ...(workflow.length > 0 ? { interceptors: { workflow } } : {}) });
}

/** Starts on `taskQueue` ask for eager start (see ClientSetup.eagerStartsOn). */
function eagerStarts(taskQueue: string): WorkflowClientInterceptor {
  return {
    start: (input, next) => next(input.options.taskQueue === taskQueue ? { ...input, options: { ...input.options, requestEagerStart: true } } : input),
  };
}
