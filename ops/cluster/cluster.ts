/**
 * The production topology on one machine, for evaluation and for `npm run test:cluster`: the Temporal server on
 * Postgres (not the dev server) with its Web UI, S3-compatible object storage, and N API and M worker processes,
 * each its own OS process with the same shared secrets, none reading another's disk.
 */
import net from 'node:net';
import path from 'node:path';
import { openDatabase } from '../../src/db/data-source';
import { log } from '../../src/log';
import { loadSecret } from '../../src/secrets';
import { startS3Gateway, S3Gateway } from '../s3-gateway';
import { METRICS_PORT_OFFSET, startTemporalServer, TemporalServer } from '../temporal-server';
import { startUiServer, UiServer } from '../ui-server';
import { ServiceMode, ServiceProcess, startServiceProcess } from './service-process';

export interface ClusterOptions {
  apis: number;
  workers: number;
  /** API process i listens on `apiPort + i`. */
  apiPort: number;
  /** The Temporal frontend's port; the server's other ports follow it (deploy/temporal/config/postgres.yaml). */
  temporalPort: number;
  /** The Web UI's port; undefined runs none. */
  uiPort: number | undefined;
  /** The service's own database (read models, ledger). */
  databaseUrl: string;
  /** The Temporal server's database; its visibility database is `<name>_visibility`. */
  temporalDatabaseUrl: string;
  /**
   * `s3`: object storage, the local S3 gateway on `s3Port` unless `S3_ENDPOINT` and `S3_BUCKET` name one already;
   * `file`: one folder shared by every process (one machine only).
   */
  storage: 's3' | 'file';
  s3Port: number;
  namespace: string;
  taskQueue: string;
  /** Logs, the shared secrets, the S3 gateway's folder, each process's DATA_DIR. */
  dataDir: string;
  toolsDir: string;
  /** More environment for every API and worker process (e.g. `LOCAL_RENDERER_DELAY_MS`). */
  env?: Record<string, string>;
  /**
   * The first metrics port: the k-th process started (the APIs, then the workers, a restarted worker after them)
   * serves `GET /metrics` on `metricsPort + 2k` (loopback), its Temporal SDK exporter on the port after it.
   * Undefined: no metrics.
   */
  metricsPort?: number;
}

export interface ClusterProcess {
  name: string;
  mode: ServiceMode;
  /** An API process's own URL. */
  url?: string;
  /** Its `GET /metrics` (when the cluster serves metrics). */
  metricsUrl?: string;
  logFile: string;
  process: ServiceProcess;
}

export interface Cluster {
  temporalAddress: string;
  uiUrl?: string;
  s3Endpoint?: string;
  apis: ClusterProcess[];
  workers: ClusterProcess[];
  /** The environment every service process gets (besides its own PORT, PUBLIC_BASE_URL and DATA_DIR). */
  env: Record<string, string>;
  /** Starts one more worker process (e.g. after one was killed). */
  startWorker(): Promise<ClusterProcess>;
  stop(): Promise<void>;
}

/** Every port in `ports` can be bound on 127.0.0.1 right now. */
export async function portsAreFree(ports: number[]): Promise<boolean> {
  const tryPort = (port: number) => new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  for (const port of ports) if (!(await tryPort(port))) return false;
  return true;
}

/** The ports the Temporal server of deploy/temporal/config/postgres.yaml binds for a frontend port `base`. */
export function temporalServerPorts(base: number): number[] {
  return [base, base + 1, base + 2, base + 6, base + 10, base - 300, base - 299, base - 298, base - 294, base + METRICS_PORT_OFFSET];
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const logs = path.join(options.dataDir, 'logs');
  const started: { stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    for (const part of started.reverse()) await part.stop().catch((err) => log.warn('stopping a cluster part failed', { error: String(err) }));
    started.length = 0;
  };
  try {
    if (!(await portsAreFree(temporalServerPorts(options.temporalPort)))) {
      throw new Error(`ports of a Temporal server at ${options.temporalPort} are taken (is npm start or another cluster running?); choose another --temporal-port`);
    }
    const temporal: TemporalServer = await startTemporalServer({
      toolsDir: options.toolsDir,
      db: { url: options.temporalDatabaseUrl },
      portBase: options.temporalPort,
      logFile: path.join(logs, 'temporal-server.log'),
      namespace: options.namespace,
    });
    started.push(temporal);

    let ui: UiServer | undefined;
    if (options.uiPort !== undefined) {
      ui = await startUiServer({
        toolsDir: options.toolsDir, temporalAddress: temporal.address, port: options.uiPort, namespace: options.namespace,
        logFile: path.join(logs, 'temporal-ui.log'),
      });
      started.push(ui);
    }

    const storageEnv: Record<string, string> = {};
    let s3: S3Gateway | undefined;
    if (options.storage === 's3' && process.env.S3_ENDPOINT && process.env.S3_BUCKET) {
      storageEnv.ASSET_STORE = 's3'; // the S3_* variables of the environment name the store
    } else if (options.storage === 's3') {
      // The gateway's root user, generated once and kept with the cluster's data.
      const accessKey = loadSecret(undefined, options.dataDir, 's3-access-key').slice(0, 20);
      const secretKey = loadSecret(undefined, options.dataDir, 's3-secret-key');
      s3 = await startS3Gateway({
        toolsDir: options.toolsDir, dir: path.join(options.dataDir, 's3'), port: options.s3Port, accessKey, secretKey,
        bucket: 'imagery', logFile: path.join(logs, 's3-gateway.log'),
      });
      started.push(s3);
      Object.assign(storageEnv, {
        ASSET_STORE: 's3', S3_ENDPOINT: s3.endpoint, S3_BUCKET: 'imagery', S3_REGION: 'us-east-1',
        S3_FORCE_PATH_STYLE: 'true', S3_ACCESS_KEY_ID: accessKey, S3_SECRET_ACCESS_KEY: secretKey,
      });
    } else {
      Object.assign(storageEnv, { ASSET_STORE: 'file', ASSETS_DIR: path.join(options.dataDir, 'assets') });
    }

    // Migrated once here, so that the processes start on a ready database.
    await (await openDatabase(options.databaseUrl, { migrate: true, poolSize: 1 })).destroy();

    const env: Record<string, string> = {
      ...options.env,
      ...storageEnv,
      DATABASE_URL: options.databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: options.namespace,
      TEMPORAL_TASK_QUEUE: options.taskQueue,
      TOOLS_DIR: options.toolsDir,
      // Equal in every process: URLs signed by one API verify on all, stored webhook secrets open on every worker.
      ASSET_SIGNING_SECRET: loadSecret(process.env.ASSET_SIGNING_SECRET, options.dataDir, 'asset-signing-secret'),
      SECRETS_KEY: loadSecret(process.env.SECRETS_KEY, options.dataDir, 'secrets-key'),
    };

    const apis: ClusterProcess[] = [];
    const workers: ClusterProcess[] = [];
    let processCount = 0;
    const startProcess = async (mode: ServiceMode, name: string, extra: Record<string, string>): Promise<ClusterProcess> => {
      const logFile = path.join(logs, `${name}.log`);
      const k = processCount++;
      const metricsPort = options.metricsPort === undefined ? undefined : options.metricsPort + 2 * k;
      const metricsEnv: Record<string, string> = metricsPort === undefined ? {}
        : { METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1', TEMPORAL_METRICS_PORT: String(metricsPort + 1) };
      const child = await startServiceProcess(mode, { ...env, DATA_DIR: path.join(options.dataDir, name), ...metricsEnv, ...extra }, { logFile });
      started.push({ stop: () => child.stop() });
      return {
        name, mode, logFile, process: child, url: extra.PUBLIC_BASE_URL,
        metricsUrl: metricsPort === undefined ? undefined : `http://127.0.0.1:${metricsPort}/metrics`,
      };
    };
    let workerCount = 0;
    const startWorker = async () => {
      const index = workerCount++;
      workers[index] = await startProcess('worker', `worker-${index + 1}`, {});
      return workers[index];
    };
    // All settled before going on or tearing down, so that no process still starting is left behind.
    const starts = await Promise.allSettled([
      ...Array.from({ length: options.apis }, async (_, i) => {
        const port = options.apiPort + i;
        apis[i] = await startProcess('api', `api-${i + 1}`, { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
      }),
      ...Array.from({ length: options.workers }, () => startWorker()),
    ]);
    const failed = starts.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return { temporalAddress: temporal.address, uiUrl: ui?.url, s3Endpoint: s3?.endpoint, apis, workers, env, startWorker, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
