/**
 * A whole service for one test suite: API over real HTTP on a free port, a worker on a unique task queue, real
 * Postgres and the shared dev server.
 */
import { ActionEventHub } from '../../api/live/action-event-hub';
import { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createApp } from '../../api/app';
import { BodyBytesInFlight } from '../../api/middleware/body-bytes-in-flight';
import type { ApiServices } from '../../api/services';
import { openDatabase } from '../../src/db/data-source';
import type { InteractiveDemandMeter } from '../../src/batches/interactive-demand';
import { type Config, DEFAULT_BATCH_LIMITS, DEFAULT_DASHBOARD_SETTINGS, DEFAULT_LIVE_STREAM_LIMITS, type DashboardSettings, type LiveStreamLimits, loadConfig } from '../../src/config';
import { createApiServer } from '../../api/server';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { allFrom, Providers, queuedProviders } from '../../src/providers';
import type { ImageProvider, TextProvider, VideoProvider } from '../../src/providers/provider';
import { type AssetStore, FileAssetStore } from '../../src/storage/asset-store';
import { UrlSigner } from '../../src/storage/signed-urls';
import { OutboundPolicy, ResolveHost } from '../../src/net/outbound';
import { SecretBox } from '../../src/secrets';
import type { ActivityDeps } from '../../activities';
import { connectClient } from '../../src/temporal/client';
import { batchTaskQueue, ProviderRoute } from '../../src/temporal/contract';
import { routeFor } from '../../src/actions/submit';
import { createProviderWorkers, createWorker } from '../../app/worker';
import { testEnvironment } from './environment';
import { linkMailer } from '../../src/users/link-mail';

export interface Stack {
  baseUrl: string;
  taskQueue: string;
  db: DataSource;
  temporal: Client;
  store: AssetStore;
  signer: UrlSigner;
  worker?: Worker;
  /** What the stack's worker activities are built from (for extra workers in a test). */
  deps: ActivityDeps;
  /** What the stack's API is built from (to list its routes in a test). */
  services: ApiServices;
  stop(): Promise<void>;
}

export interface StackOptions {
  rateLimitPerMinute?: number;
  withWorker?: boolean;
  /** One provider for every capability (the local renderer by default). */
  provider?: ImageProvider & TextProvider & VideoProvider;
  /** Providers per capability (a remote adapter, or one that is not configured); overrides `provider`. */
  providers?: Providers;
  taskQueue?: string;
  outboundAllowCidrs?: string[];
  /** How the API's and the worker's outbound policies resolve names (the system's resolver by default). */
  outboundResolveHost?: ResolveHost;
  webhookRetryInitialMs?: number;
  jobMaxAttempts?: number;
  jobRetryBackoffMs?: number;
  /**
   * A batch's items in flight, and an account's (DEFAULT_BATCH_LIMITS unless set), and the demand batches yield at
   * (never unless set: the suite's jobs, of any test, would slow every batch test; test/api/interactive-demand.test.ts sets it).
   */
  batchLimits?: { itemsInFlight: number; accountItemsInFlight: number; yieldAt?: number | null };
  /** The API's meter of interactive requests (left out: not measured, as an app built without one). */
  interactiveDemand?: InteractiveDemandMeter;
  /** Limits of the live-progress streams (DEFAULT_LIVE_STREAM_LIMITS where left out). */
  liveStreams?: Partial<LiveStreamLimits>;
  /** How long a funnel session waits for its next step (a day by default, seconds in the expiry test). */
  funnelIdleTimeoutSeconds?: number;
  /** A different outbound policy for the worker than for the API (to test the send-time address check). */
  workerOutboundAllowCidrs?: string[];
  /** The API's cap on request-body bytes in flight (400 MiB, the default of MAX_BODY_BYTES_IN_FLIGHT). */
  maxBodyBytesInFlight?: number;
  /** The asset store of the API and the worker (a folder under the system's temp folder by default). */
  store?: AssetStore;
  /** `ASSET_DELIVERY` and `S3_PRESIGN_SECONDS` of the API (as `loadConfig` defaults them when left out). */
  assetDelivery?: 'redirect' | 'stream';
  s3PresignSeconds?: number;
  /** The worker's workflow bundle (the suite's shared one by default; the tracing test's has its interceptors). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** The API's client deadlines (`HTTP_*_SECONDS`; the defaults of `loadConfig` when left out), short in the slow-client tests. */
  http?: Partial<Pick<Config, 'httpHeadersTimeoutSeconds' | 'httpRequestTimeoutSeconds' | 'httpIdleTimeoutSeconds' | 'httpKeepAliveTimeoutSeconds'>>;
  /** Where the dashboard's links are mailed (the service log when left out). */
  smtpUrl?: string;
  /** The dashboard's settings that differ from DEFAULT_DASHBOARD_SETTINGS. */
  dashboard?: Partial<DashboardSettings>;
}

/** The provider route the API gives an action of `product` on this stack (a video advanced on timers every second). */
export function providerRoute(stack: Stack, product: 'photo' | 'card' | 'video' | 'edit'): ProviderRoute {
  const { route } = routeFor(stack.deps.providers, stack.taskQueue, product);
  return product === 'video' ? { ...route, pollSeconds: 1 } : route;
}

export const TEST_SECRETS = new SecretBox('test-secrets-key');

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const env = testEnvironment();
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const db = await openDatabase(env.databaseUrl, { migrate: false, poolSize: 10 });
  const store = options.store ?? new FileAssetStore(path.join(os.tmpdir(), 'imagery-test-assets'));
  const provider = options.provider ?? new LocalRenderer();
  const outbound = new OutboundPolicy(options.outboundAllowCidrs ?? loadConfig().outboundAllowCidrs, options.outboundResolveHost);
  const workerOutbound = options.workerOutboundAllowCidrs ? new OutboundPolicy(options.workerOutboundAllowCidrs, options.outboundResolveHost) : outbound;
  const deps: ActivityDeps = {
    db, store, providers: options.providers ?? allFrom(provider), outbound: workerOutbound, secrets: TEST_SECRETS, webhookRetryInitialMs: options.webhookRetryInitialMs ?? 200,
    config: { taskQueue, jobMaxAttempts: options.jobMaxAttempts ?? 3, jobRetryBackoffMs: options.jobRetryBackoffMs ?? 200 },
    batchLimits: options.batchLimits ?? { ...DEFAULT_BATCH_LIMITS, yieldAt: null },
  };

  let worker: Worker | undefined;
  let connection: NativeConnection | undefined;
  let running: Promise<unknown> | undefined;
  let queueWorkers: Worker[] = [];
  if (options.withWorker !== false) {
    const setup = { address: env.temporalAddress, namespace: 'default', taskQueue, deps };
    ({ worker, connection } = await createWorker({ ...setup, workflowBundle: options.workflowBundle ?? env.workflowBundle }));
    // The batch queue's worker, as every worker process runs one unless WORKER_QUEUES leaves it out.
    const { worker: batchWorker } = await createWorker({ ...setup, taskQueue: batchTaskQueue(taskQueue), connection, workflowBundle: options.workflowBundle ?? env.workflowBundle });
    queueWorkers = [batchWorker, ...await createProviderWorkers(setup, connection, queuedProviders(deps.providers),
      () => ({ maxConcurrent: 10, maxPerSecond: 0 }))];
    running = Promise.all([worker, ...queueWorkers].map((w) => w.run()));
  }
  // As `npm start` (app/main.ts): with a worker, the client shares its native connection and starts eagerly on its
  // queue; without one, as an API process alone, it has a connection of its own.
  const temporal = connection
    ? await connectClient(env.temporalAddress, 'default', { shared: connection, eagerStartsOn: taskQueue })
    : await connectClient(env.temporalAddress, 'default');

  const defaults = loadConfig();
  const timeouts = {
    httpHeadersTimeoutSeconds: defaults.httpHeadersTimeoutSeconds, httpRequestTimeoutSeconds: defaults.httpRequestTimeoutSeconds,
    httpIdleTimeoutSeconds: defaults.httpIdleTimeoutSeconds, httpKeepAliveTimeoutSeconds: defaults.httpKeepAliveTimeoutSeconds, ...options.http,
  };
  // The server of `npm start`, with its deadlines; the app is attached once it is built (it needs the port).
  const server = createApiServer(timeouts);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signer = new UrlSigner('test-signing-secret', baseUrl);
  const services: ApiServices = {
    config: { rateLimitPerMinute: options.rateLimitPerMinute ?? 10_000, taskQueue, publicBaseUrl: baseUrl, webhookRetryInitialMs: deps.webhookRetryInitialMs,
      jobMaxAttempts: deps.config.jobMaxAttempts, jobRetryBackoffMs: deps.config.jobRetryBackoffMs,
      funnelIdleTimeoutSeconds: options.funnelIdleTimeoutSeconds ?? 86_400,
      assetDelivery: options.assetDelivery, s3PresignSeconds: options.s3PresignSeconds, httpIdleTimeoutSeconds: timeouts.httpIdleTimeoutSeconds,
      dashboard: { ...DEFAULT_DASHBOARD_SETTINGS, ...options.dashboard },
    },
    db, temporal, store, signer, providers: deps.providers, outbound, secrets: TEST_SECRETS,
    bodyBytesInFlight: new BodyBytesInFlight(options.maxBodyBytesInFlight ?? defaults.maxBodyBytesInFlight),
    liveEvents: ActionEventHub.forDataSource(db, { ...DEFAULT_LIVE_STREAM_LIMITS, ...options.liveStreams }),
    linkMail: linkMailer({ smtpUrl: options.smtpUrl, mailFrom: 'Product imagery <no-reply@example.com>' }, [100, 200]),
    interactiveDemand: options.interactiveDemand,
  };
  server.on('request', createApp(services).callback());

  return {
    baseUrl, taskQueue, db, temporal, store, signer, worker, deps, services,
    async stop() {
      await services.liveEvents.close();
      await services.linkMail.drain();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (worker) {
        for (const w of [worker, ...queueWorkers]) if (w.getState() === 'RUNNING') w.shutdown(); // a test may have stopped one
        await running;
      }
      await temporal.connection.close(); // the workers' connection when shared, once they no longer hold it
      await db.destroy();
    },
  };
}

/** Two API processes' worth of apps (no worker) over one database: what a limit shared across processes is tried on. */
export async function startApiPair(rateLimitPerMinute: number): Promise<[Stack, Stack]> {
  return [await startStack({ withWorker: false, rateLimitPerMinute }), await startStack({ withWorker: false, rateLimitPerMinute })];
}
