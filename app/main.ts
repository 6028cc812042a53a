/**
 * Process entry: `all` (API and worker in one process, the default of `npm start`), `api` or `worker`.
 * Provisions what is missing (database, migrations, the Temporal dev server), runs, and drains on SIGTERM.
 */
import { ActionEventHub } from '../api/live/action-event-hub';
import http from 'node:http';
import os from 'node:os';
import sharp from 'sharp';
import path from 'node:path';
import type { Worker } from '@temporalio/worker';
import { createApp } from '../api/app';
import { BodyBytesInFlight } from '../api/middleware/body-bytes-in-flight';
import { createApiServer } from '../api/server';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { log } from '../src/log';
import { createProviders, queuedProviders } from '../src/providers';
import { SANDBOX_PROVIDER } from '../src/providers/sandbox';
import { OutboundPolicy } from '../src/net/outbound';
import { createAssetStore } from '../src/storage/create-asset-store';
import { tracing } from '../src/telemetry/spans';
import { expireHelperReservations, HELPER_RESERVATION_TTL_SECONDS } from '../src/helper-usage/usage';
import { UrlSigner } from '../src/storage/signed-urls';
import { loadSecret, SecretBox } from '../src/secrets';
import { ensureHousekeepingSchedule } from '../src/housekeeping/schedule';
import { connectClient } from '../src/temporal/client';
import { batchTaskQueue } from '../src/temporal/contract';
import { DevServer, startDevServer, temporalAnswers } from '../ops/dev-server';
import { reconcileExclusively } from '../src/actions/reconcile';
import { connectWorker, createProviderWorkers, createWorker, installRuntime, workerQueues } from './worker';
import { registerDatabaseGauges } from '../src/metrics/database-gauges';
import { MetricsServer, startMetricsServer } from '../src/metrics/server';
import { type LinkMailer, linkMailer } from '../src/users/link-mail';
import { InteractiveDemandMeter, publishInteractiveDemand } from '../src/batches/interactive-demand';

type Mode = 'all' | 'api' | 'worker';
const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

async function resolveTemporal(config: ReturnType<typeof loadConfig>, mode: Mode): Promise<{ address: string; devServer?: DevServer }> {
  if (config.temporalAddress) return { address: config.temporalAddress };
  if (await temporalAnswers(DEFAULT_TEMPORAL_ADDRESS)) return { address: DEFAULT_TEMPORAL_ADDRESS };
  if (mode !== 'all') {
    throw new Error(`no Temporal server answers at ${DEFAULT_TEMPORAL_ADDRESS}; start one (npm start does) or set TEMPORAL_ADDRESS`);
  }
  const devServer = await startDevServer({
    cliPath: config.temporalCliPath,
    toolsDir: config.toolsDir,
    dbFile: path.join(config.dataDir, 'temporal.sqlite'),
    port: 7233,
    uiPort: config.temporalUiPort,
    logFile: path.join(config.dataDir, 'temporal-dev-server.log'),
    namespace: config.temporalNamespace,
  });
  return { address: devServer.address, devServer };
}

/**
 * The local renderer's renders at once in this process. In `all` mode it shares the process (and the machine) with
 * the API: one fewer than there are cores, each on one libvips thread, so that a burst of renders never takes every
 * core from accepting requests; the rest wait their turn. `LOCAL_MAX_CONCURRENCY` decides when set; elsewhere its
 * queue's cap (`PROVIDER_MAX_CONCURRENCY`). Images are local activities of the main worker (`ProviderRoute.inline`),
 * so the renderer bounds them itself; its videos keep its task queue, capped alike.
 */
function localRenders(config: ReturnType<typeof loadConfig>, mode: Mode): number {
  const queueCap = config.providerLimits('local').maxConcurrent;
  if (mode !== 'all' || config.providerConcurrencySet('local')) return queueCap;
  sharp.concurrency(1);
  return Math.max(1, Math.min(queueCap, os.availableParallelism() - 1));
}

async function main(mode: Mode): Promise<void> {
  const config = loadConfig();
  // libvips' operation cache keeps recent images for reuse; every image here is new, so it would only hold memory.
  sharp.cache(false);
  // Before any client, worker or app is made: they add tracing's interceptors and middleware only when it is on.
  if (config.otlpEndpoint) {
    // Required here only: with tracing off, the SDK and the exporter are never loaded.
    (await import('../src/telemetry/tracing')).installTracing({ serviceName: config.otelServiceName, otlpEndpoint: config.otlpEndpoint });
    log.info('tracing on', { otlpCollector: new URL(config.otlpEndpoint).origin, serviceName: config.otelServiceName }); // no path: it may hold a token
  }
  const renders = localRenders(config, mode);
  const providers = createProviders(config, { localMaxConcurrent: renders });
  // Checked before anything starts: a process that takes requests must also run their workflows.
  const queues = mode === 'api' ? undefined : workerQueues(config.workerQueues, queuedProviders(providers), { requireMain: mode === 'all' });
  if (config.workerQueues && queues && !queues.providers.includes(SANDBOX_PROVIDER)) {
    log.warn('this worker does not serve the sandbox queue (WORKER_QUEUES has no "sandbox"): sandbox keys\' videos need a worker that does', { workerQueues: config.workerQueues });
  }
  if (queues && !queues.main && !queues.batch) log.warn('this worker serves no workflows (WORKER_QUEUES has neither "main" nor "batch"): at least one worker process must serve each', { providerQueues: queues.providers });
  if (config.workerQueues && queues && !queues.batch) {
    log.warn('this worker does not serve the batch queue (WORKER_QUEUES has no "batch"): catalogue batches need a worker process that does', { workerQueues: config.workerQueues });
  }
  // The SDK's runtime is installed before anything uses it, so that its worker metrics are exported (loopback only).
  const sdkMetricsAddress = mode !== 'api' && config.metricsPort !== undefined && config.temporalMetricsPort !== undefined
    ? `127.0.0.1:${config.temporalMetricsPort}` : undefined;
  if (mode !== 'api') installRuntime({ metricsBindAddress: sdkMetricsAddress });
  const { address, devServer } = await resolveTemporal(config, mode);
  const db = await openDatabase(config.databaseUrl, { migrate: true });
  // The workers' connection; in `all` mode the API's client shares it, and starts its workflows eagerly on this
  // process's own worker (src/temporal/client.ts).
  const workerConnection = mode === 'api' ? undefined : await connectWorker(address);
  const temporal = await connectClient(address, config.temporalNamespace,
    mode === 'all' && workerConnection ? { shared: workerConnection, eagerStartsOn: config.taskQueue } : {});
  const store = createAssetStore(config);
  const outbound = new OutboundPolicy(config.outboundAllowCidrs);
  const secrets = new SecretBox(loadSecret(config.secretsKey, config.dataDir, 'secrets-key'));

  let metrics: MetricsServer | undefined;
  if (mode !== 'worker') registerDatabaseGauges(db);
  if (config.metricsPort !== undefined) {
    metrics = await startMetricsServer({
      host: config.metricsHost, port: config.metricsPort, sdkMetricsUrl: sdkMetricsAddress && `http://${sdkMetricsAddress}/metrics`,
    });
    log.info('metrics served', { url: metrics.url, temporalSdk: sdkMetricsAddress ?? null });
  }

  const workers: Worker[] = [];
  /** Each worker's run, to drain them all; `workerRun` fails at the first that fails. */
  let workerRuns: Promise<unknown>[] = [];
  let workerRun: Promise<unknown> | undefined;
  if (mode !== 'api') {
    const setup = { address, namespace: config.temporalNamespace, taskQueue: config.taskQueue, deps: {
      db, store, providers, outbound, secrets, webhookRetryInitialMs: config.webhookRetryInitialMs, sandboxSparks: config.sandboxSparks,
      config: { taskQueue: config.taskQueue, jobMaxAttempts: config.jobMaxAttempts, jobRetryBackoffMs: config.jobRetryBackoffMs },
      batchLimits: config.batchLimits,
    } };
    const { main: servesMain, batch: servesBatches, providers: providerNames } = queues!;
    const connection = workerConnection!; // opened above for every mode but `api`
    if (servesMain) workers.push((await createWorker({ ...setup, connection, yieldToApi: mode === 'all' })).worker);
    if (servesBatches) workers.push((await createWorker({ ...setup, taskQueue: batchTaskQueue(config.taskQueue), connection, yieldToApi: mode === 'all' })).worker);
    const limits = (name: string) => (name === 'local' ? { ...config.providerLimits(name), maxConcurrent: renders } : config.providerLimits(name));
    workers.push(...(await createProviderWorkers(setup, connection, providerNames, limits)));
    workerRuns = workers.map((w) => w.run());
    workerRun = Promise.all(workerRuns);
    if (servesMain) {
      // Starts left in flight by API processes that died, and actions whose workflow an operator terminated.
      const reconcilePass = () => void reconcileExclusively(db, temporal, {
        taskQueue: config.taskQueue, graceSeconds: config.reconcileGraceSeconds, webhookRetryInitialMs: config.webhookRetryInitialMs,
      });
      reconcilePass();
      setInterval(reconcilePass, 60_000).unref();
      // Retention (expired records, unreferenced inputs): a Temporal schedule, one run per interval for the deployment.
      const ensureSchedule = () => void ensureHousekeepingSchedule(temporal, config.taskQueue).catch((err) => {
        log.warn('the housekeeping schedule could not be made sure of; trying again in a minute', { error: String(err) });
        setTimeout(ensureSchedule, 60_000).unref();
      });
      ensureSchedule();
    }
    log.info('worker running', { taskQueues: workers.map((w) => w.options.taskQueue), temporal: address });
  }

  let server: http.Server | undefined;
  let liveEvents: ActionEventHub | undefined;
  let linkMail: LinkMailer | undefined;
  let stopDemand: (() => Promise<void>) | undefined;
  if (mode !== 'worker') {
    const signer = new UrlSigner(loadSecret(config.assetSigningSecret, config.dataDir, 'asset-signing-secret'), config.publicBaseUrl);
    liveEvents = ActionEventHub.forDataSource(db, config.liveStreams);
    linkMail = linkMailer(config);
    // Batches yield to the interactive requests of every API process (BATCH_YIELD_AT; src/batches/interactive-demand.ts).
    const interactiveDemand = config.batchLimits.yieldAt === null ? undefined : new InteractiveDemandMeter();
    if (interactiveDemand) stopDemand = publishInteractiveDemand(db, interactiveDemand);
    const app = createApp({
      config, db, temporal, store, signer, providers, outbound, secrets, bodyBytesInFlight: new BodyBytesInFlight(config.maxBodyBytesInFlight), liveEvents, linkMail,
      interactiveDemand,
    });
    server = createApiServer(config, app.callback());
    await new Promise<void>((resolve) => server!.listen(config.port, resolve));
    // Helper calls left reserved by an API process that died mid-call: cancelled (not counted, a held spark released).
    const expireHelperCalls = () => void expireHelperReservations(db, HELPER_RESERVATION_TTL_SECONDS)
      .catch((err) => log.warn('expiring helper reservations failed', { error: String(err) }));
    expireHelperCalls();
    setInterval(expireHelperCalls, 60_000).unref();
    log.info('API listening', {
      url: config.publicBaseUrl, openapi: `${config.publicBaseUrl}/openapi.json`, ...(config.dashboard.enabled ? { dashboard: `${config.publicBaseUrl}/dashboard/` } : {}),
    });
  }
  if (devServer?.uiUrl) log.info('Temporal Web UI', { url: devServer.uiUrl });

  let stopping = false;
  /** Drains and exits; a worker that failed exits 1, so that a supervisor (systemd, Docker, Kubernetes) restarts it. */
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    const closing = server ? new Promise<void>((resolve) => server!.close(() => resolve())) : Promise.resolve();
    server?.closeIdleConnections();
    // The SDK drains its workers on SIGTERM and SIGINT itself; a worker it has not reached yet is asked here.
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await liveEvents?.close(); // ends the event streams, which would keep the server open
    // Every worker drained, not only until the first one failed: `npm start`'s client shares their connection, which
    // closes only once no worker holds it, and the database stays open for the activities still running.
    await Promise.allSettled([closing, ...workerRuns, linkMail?.drain()]);
    await stopDemand?.();
    await metrics?.close();
    await temporal.connection.close().catch((err) => log.warn('closing the Temporal connection failed', { error: String(err) }));
    await db.destroy().catch(() => undefined);
    await tracing()?.shutdown().catch(() => undefined); // the last spans, flushed
    await devServer?.stop();
    log.info('stopped', { exitCode });
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  workerRun?.catch((err) => {
    log.error('worker stopped with an error', { error: String(err) });
    void stop('worker-error', 1);
  });
}

const mode = (process.argv[2] ?? 'all') as Mode;
if (!['all', 'api', 'worker'].includes(mode)) {
  process.stderr.write('usage: node dist/app/main.js [all|api|worker]\n');
  process.exit(2);
}
main(mode).catch((err) => {
  log.error('failed to start', { error: (err as Error).stack ?? String(err) });
  process.exit(1);
});
