/**
 * The fault suite's topology, on either Temporal backend: the backend (the dev server on its SQLite file, or the
 * Temporal server on Postgres), two API processes and worker processes, each its own OS process started from the
 * build, sharing a Postgres server of the suite's own and one asset folder. The backend and that Postgres can be
 * stopped and started again on the same state.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { portsAreFree, temporalServerPorts } from '../../ops/cluster/cluster';
import { ServiceProcess, startServiceProcess } from '../../ops/cluster/service-process';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/data-source';
import { freePort, startDevServer } from '../../ops/dev-server';
import { startTemporalServer } from '../../ops/temporal-server';
import { dropTemporalDatabases, resetDatabase } from '../support/environment';
import { OwnPostgres, startOwnPostgres } from './postgres';

export type BackendKind = 'dev' | 'server';

export interface Backend {
  kind: BackendKind;
  address: string;
  /** Stops it; `start` brings it back on the same state and address. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

const TEMPORAL_DATABASE_URL = process.env.TEST_FAULTS_TEMPORAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/temporal_faults_test';

async function startBackend(kind: BackendKind, dir: string): Promise<Backend> {
  const { toolsDir, temporalCliPath } = loadConfig();
  let stopCurrent: (() => Promise<void>) | undefined;
  let start: () => Promise<string>;
  if (kind === 'dev') {
    const port = await freePort();
    start = async () => {
      const dev = await startDevServer({
        cliPath: temporalCliPath, toolsDir, port, dbFile: path.join(dir, 'temporal-dev.sqlite'), logFile: path.join(dir, 'logs', 'temporal-dev-server.log'),
      });
      stopCurrent = () => dev.stop();
      return dev.address;
    };
  } else {
    await dropTemporalDatabases(TEMPORAL_DATABASE_URL);
    let portBase = 0;
    do portBase = 10_000 + Math.floor(Math.random() * 20_000); while (!(await portsAreFree(temporalServerPorts(portBase))));
    start = async () => {
      const server = await startTemporalServer({
        toolsDir, db: { url: TEMPORAL_DATABASE_URL }, portBase, logFile: path.join(dir, 'logs', 'temporal-server.log'), namespace: 'default',
      });
      stopCurrent = () => server.stop();
      return server.address;
    };
  }
  const address = await start();
  return {
    kind,
    address,
    async stop() {
      await stopCurrent?.();
      stopCurrent = undefined;
    },
    async start() {
      await start();
    },
  };
}

export interface FaultStack {
  backend: Backend;
  /** The service's own database server (the Temporal server keeps its state on the machine's Postgres). */
  postgres: OwnPostgres;
  /** The first API process; `apiUrls` has both. */
  apiUrl: string;
  apiUrls: string[];
  db: DataSource;
  temporal: Client;
  assetsDir: string;
  /** Where every process of the stack writes its log. */
  logsDir: string;
  workers: ServiceProcess[];
  /** Starts one more worker process. */
  startWorker(): Promise<ServiceProcess>;
  /**
   * Kills the oldest worker process with SIGKILL (a crash: nothing drains) and starts a new one; `meanwhile` runs
   * between the two.
   */
  replaceWorker(meanwhile?: () => Promise<void>): Promise<void>;
  /** Service processes that exited without being stopped or killed by the suite (a crash), with how they exited. */
  unexpectedExits: string[];
  /** The last `lines` lines of every process's log: what a failed scenario reports. */
  logTails(lines?: number): string;
  stop(): Promise<void>;
}

/** The renderer takes this long per image, so that a fault can land in the middle of a render. */
export const RENDER_DELAY_MS = 1500;

/** `env`: more environment for every service process (e.g. a video provider's settings). */
export async function startFaultStack(kind: BackendKind, taskQueue: string, extraEnv: Record<string, string> = {}): Promise<FaultStack> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `imagery-faults-${kind}-`));
  const postgres = await startOwnPostgres();
  const stops: (() => Promise<void>)[] = [async () => postgres.destroy()];
  try {
    const APP_DATABASE_URL = postgres.url('imagery');
    await resetDatabase(APP_DATABASE_URL);
    const backend = await startBackend(kind, dir);
    stops.push(() => backend.stop());
    const assetsDir = path.join(dir, 'assets');
    const env: Record<string, string> = {
      DATABASE_URL: APP_DATABASE_URL, TEMPORAL_ADDRESS: backend.address, TEMPORAL_TASK_QUEUE: taskQueue,
      ASSET_STORE: 'file', ASSETS_DIR: assetsDir, ASSET_SIGNING_SECRET: randomBytes(32).toString('hex'), SECRETS_KEY: randomBytes(32).toString('hex'),
      LOCAL_RENDERER_DELAY_MS: String(RENDER_DELAY_MS), RATE_LIMIT_PER_MINUTE: '100000', RECONCILE_GRACE_SECONDS: '86400',
      WEBHOOK_RETRY_INITIAL_MS: '500', ...extraEnv,
    };
    const logs = path.join(dir, 'logs');
    const unexpectedExits: string[] = [];
    /** The process, watched: an exit the suite did not ask for (kill or stop) is a crash, reported by the test. */
    const watched = (name: string, service: ServiceProcess): ServiceProcess => {
      let told = false;
      void service.exited.then((code) => {
        if (!told) unexpectedExits.push(`${name} exited by itself (code ${code}, signal ${service.child.signalCode}); see ${path.join(logs, `${name}.log`)}`);
      });
      return {
        ...service,
        kill: (signal) => { told = true; return service.kill(signal); },
        stop: (graceMs) => { told = true; return service.stop(graceMs); },
      };
    };
    const apiUrls: string[] = [];
    for (const n of [1, 2]) {
      const port = await freePort();
      const api = watched(`api-${n}`, await startServiceProcess('api', { ...env, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, DATA_DIR: path.join(dir, `api-${n}`) },
        { logFile: path.join(logs, `api-${n}.log`) }));
      stops.push(() => api.stop());
      apiUrls.push(`http://127.0.0.1:${port}`);
    }
    const workers: ServiceProcess[] = [];
    let workersStarted = 0;
    const startWorker = async () => {
      const name = `worker-${++workersStarted}`;
      const worker = watched(name, await startServiceProcess('worker', { ...env, DATA_DIR: path.join(dir, name) }, { logFile: path.join(logs, `${name}.log`) }));
      workers.push(worker);
      stops.push(() => worker.stop(5_000));
      return worker;
    };
    await startWorker();
    const db = await openDatabase(APP_DATABASE_URL, { migrate: false, poolSize: 4 });
    stops.push(() => db.destroy());
    const connection = await Connection.connect({ address: backend.address });
    stops.push(() => connection.close());
    return {
      backend, postgres, apiUrl: apiUrls[0], apiUrls, db, temporal: new Client({ connection, namespace: 'default' }), assetsDir, logsDir: logs, workers, startWorker,
      async replaceWorker(meanwhile) {
        await workers.shift()!.kill('SIGKILL');
        await meanwhile?.();
        await startWorker();
      },
      unexpectedExits,
      logTails(lines = 30) {
        return readdirSync(logs).sort().map((file) => {
          const tail = readFileSync(path.join(logs, file), 'utf8').trimEnd().split('\n').slice(-lines).map((line) => line.slice(0, 600));
          return `--- ${file} (last ${tail.length} lines)\n${tail.join('\n')}`;
        }).join('\n');
      },
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}
