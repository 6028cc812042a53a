/** Builds the worker: one task queue, every workflow from workflows/index, every activity from the factory. */
import { NativeConnection, Runtime, Worker, WorkerOptions } from '@temporalio/worker';
import type * as OtelWorker from '@temporalio/interceptors-opentelemetry/lib/worker';
import { createActivities, ActivityDeps } from '../activities';
import { sdkLogger } from '../src/log';
import { tracing } from '../src/telemetry/spans';
import { providerTaskQueue } from '../src/temporal/contract';
import { cachedWorkflowBundle, DEFAULT_BUNDLE_SOURCES } from './workflow-bundle';

let runtimeInstalled = false;

/**
 * Routes the SDK's logging (its own, and workflows' and activities' `log`) into our JSON lines at our level
 * (warnings by default), once per process; given `metricsBindAddress`, the SDK's worker metrics (task slots,
 * schedule-to-start latency, sticky cache) are served there in the Prometheus format (merged into the process's
 * /metrics, src/metrics/server.ts). The first call of the process decides.
 */
export function installRuntime(options: { metricsBindAddress?: string } = {}): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      logger: sdkLogger(),
      ...(options.metricsBindAddress ? {
        telemetryOptions: { metrics: { prometheus: { bindAddress: options.metricsBindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } } },
      } : {}),
    });
  } catch {
    // already installed by someone else in this process (tests)
  }
}

export interface WorkerSetup {
  address: string;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A prebuilt bundle (tests share one); by default workflows/ is bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** A connection to share with other workers of the process; by default one is opened. */
  connection?: NativeConnection;
  /**
   * Yield to the API in the same process (`all` mode): workflow tasks and local activities take slots beyond their
   * minimum only while the machine's CPU is under half busy, so a burst of requests is accepted first and its jobs
   * run after (Temporal's resource-based tuner), and at most 10 run at once (more in flight only hold more workflow
   * state and more Postgres work at the same time, not more throughput on a small machine); and at most
   * YIELDING_CACHED_WORKFLOWS workflows stay cached between their tasks (the rest replay their short history when
   * their next task comes), so a burst of a thousand jobs waiting for their renders does not hold a thousand
   * workflows in memory. Measured on the bench's 1,000 real renders: settled RSS 455 -> 395 MiB and the burst done in
   * 104 s instead of 160 s, against 200 cached and 200 slots.
   */
  yieldToApi?: boolean;
}

/** Workflows the main worker keeps cached in `all` mode (see WorkerSetup.yieldToApi; the SDK's default is sized by the heap limit). */
export const YIELDING_CACHED_WORKFLOWS = 50;

/** The main worker's slots in `all` mode (see WorkerSetup.yieldToApi). */
export const YIELDING_TUNER: WorkerOptions['tuner'] = {
  tunerOptions: { targetCpuUsage: 0.5, targetMemoryUsage: 0.8 },
  workflowTaskSlotOptions: { minimumSlots: 2, maximumSlots: 10 },
  activityTaskSlotOptions: { minimumSlots: 1, maximumSlots: 200 },
  localActivityTaskSlotOptions: { minimumSlots: 2, maximumSlots: 10 },
  nexusTaskSlotOptions: { minimumSlots: 1, maximumSlots: 10 },
};

/** The main queue's name in `WORKER_QUEUES`: workflows and bookkeeping activities. */
export const MAIN_QUEUE = 'main';
/** The batch queue's name in `WORKER_QUEUES`: catalogue batches and their items' jobs (`batchTaskQueue`). */
export const BATCH_QUEUE = 'batch';

/**
 * What one worker process serves (`WORKER_QUEUES`, e.g. `main`, `batch`, `gemini`, `main,runway`): the main task
 * queue, the batch queue and/or the queues of configured providers; unset means all of them. Anything else stops
 * the process.
 */
export function workerQueues(
  selection: string[] | undefined, configuredProviders: string[], options: { requireMain?: boolean } = {},
): { main: boolean; batch: boolean; providers: string[] } {
  const providers = [...new Set(configuredProviders)];
  if (!selection) return { main: true, batch: true, providers };
  const unknown = selection.filter((q) => q !== MAIN_QUEUE && q !== BATCH_QUEUE && !providers.includes(q));
  if (unknown.length > 0 || selection.length === 0) {
    throw new Error(`WORKER_QUEUES may name ${[MAIN_QUEUE, BATCH_QUEUE, ...providers].join(', ')}; got "${selection.join(',')}"`);
  }
  if (options.requireMain && !selection.includes(MAIN_QUEUE)) {
    throw new Error('WORKER_QUEUES must include "main" when the API runs in the same process: its requests would start workflows no one runs');
  }
  return { main: selection.includes(MAIN_QUEUE), batch: selection.includes(BATCH_QUEUE), providers: providers.filter((p) => selection.includes(p)) };
}

/**
 * The workflow interceptor modules of tracing, bundled with the workflows: Temporal's OpenTelemetry workflow
 * interceptors (deterministic: spans are made in the sandbox and leave through the `exporter` sink) and ours that
 * puts the request id on workflow log lines. A prebuilt bundle (tests) must be built with them to be traced.
 */
export const TRACING_WORKFLOW_MODULES = [
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
  require.resolve('../workflows/interceptors/request-id'),
];

/**
 * What tracing adds to a worker when it is on (nothing when it is off): an activity span per execution, continuing
 * the trace of the workflow's headers; trace fields on activities' log lines; the workflows' spans' sink and
 * interceptor modules.
 */
function tracingOptions(withWorkflows: boolean): Partial<WorkerOptions> {
  const installed = tracing();
  if (!installed) return {};
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } =
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a package, loaded only with tracing on
    require('@temporalio/interceptors-opentelemetry/lib/worker') as typeof OtelWorker; // loaded only with tracing on
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
      ...(withWorkflows ? { workflowModules: TRACING_WORKFLOW_MODULES } : {}),
    },
    ...(withWorkflows ? { sinks: { exporter: makeWorkflowExporter(installed.spanProcessor, installed.resource) } } : {}),
  };
}

export async function connectWorker(address: string): Promise<NativeConnection> {
  installRuntime();
  return NativeConnection.connect({ address });
}

export interface ProviderQueueLimits {
  /** Provider calls one worker process runs at once. */
  maxConcurrent: number;
  /** Provider calls per second on the task queue, across every worker process (0: unlimited). */
  maxPerSecond: number;
}

/**
 * Workers for the providers' own task queues (`<task queue>-provider-<name>`): activities only, with the
 * provider's concurrency cap per process and its rate cap enforced by the server for the whole queue, so a
 * provider's quota holds however many worker processes run.
 */
export async function createProviderWorkers(
  setup: Omit<WorkerSetup, 'workflowBundle'>, connection: NativeConnection, providerNames: string[], limits: (name: string) => ProviderQueueLimits,
): Promise<Worker[]> {
  return Promise.all([...new Set(providerNames)].map((name) => {
    const { maxConcurrent, maxPerSecond } = limits(name);
    return Worker.create({
      connection,
      namespace: setup.namespace,
      taskQueue: providerTaskQueue(setup.taskQueue, name),
      activities: createActivities(setup.deps),
      maxConcurrentActivityTaskExecutions: maxConcurrent,
      ...(maxPerSecond > 0 ? { maxTaskQueueActivitiesPerSecond: maxPerSecond } : {}),
      shutdownGraceTime: '20 seconds',
      ...tracingOptions(false),
    });
  }));
}

export async function createWorker(setup: WorkerSetup): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = setup.connection ?? await connectWorker(setup.address);
  const worker = await Worker.create({
    connection,
    namespace: setup.namespace,
    taskQueue: setup.taskQueue,
    // With tracing on, the SDK bundles at start with the interceptor modules; else the bundle of this code, made once.
    ...(setup.workflowBundle ? { workflowBundle: setup.workflowBundle } : tracing() ? { workflowsPath: require.resolve('../workflows') } : { workflowBundle: await cachedWorkflowBundle(DEFAULT_BUNDLE_SOURCES, Runtime.instance().logger) }),
    activities: createActivities(setup.deps),
    shutdownGraceTime: '20 seconds',
    ...(setup.yieldToApi ? { tuner: YIELDING_TUNER, maxCachedWorkflows: YIELDING_CACHED_WORKFLOWS } : {}),
    ...tracingOptions(true),
  });
  return { worker, connection };
}
