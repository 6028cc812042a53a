/**
 * `npm run cluster -- [--apis N] [--workers M] ...`: the production topology on this machine (see
 * ops/cluster/cluster.ts), up until Ctrl-C. Every part is a separate OS process with its log under
 * `<data-dir>/logs`; the Go programs are built once into the tools folder.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startCluster } from '../../ops/cluster/cluster';
import { loadConfig } from '../../src/config';
import { log } from '../../src/log';
import { TEMPORAL_PORT_BASE_RANGE } from '../../ops/temporal-server';

const USAGE = `usage: npm run cluster -- [options]
  --apis N                API processes (default 2), on ports --api-port, --api-port + 1, ...
  --workers M             worker processes (default 2)
  --api-port P            first API port (default 3000)
  --temporal-port P       Temporal frontend port (default 7233; the server also binds P+1, P+2, P+6, P+10, P-300.., P+767)
  --ui-port P             Temporal Web UI port (default 8233); --no-ui runs none
  --storage s3|file       s3 (default): the local S3 gateway, or the store named by S3_ENDPOINT and S3_BUCKET;
                          file: one folder that every process shares (this machine only)
  --s3-port P             the local S3 gateway's port (default 7070)
  --metrics-port P        first metrics port (default 9464): process k (the APIs, then the workers) serves
                          GET /metrics on P + 2k, its Temporal SDK exporter on P + 2k + 1 (loopback);
                          --no-metrics serves none (deploy/prometheus/prometheus.yml scrapes the default layout)
  --temporal-db URL       the Temporal server's database (default postgres://postgres@127.0.0.1:5432/temporal)
  --data-dir DIR          logs, secrets, the gateway's objects (default .data/cluster)
The service's own database is DATABASE_URL (as for npm start); other variables of docs/configuration.md pass through to
every API and worker process.`;

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) throw new Error(`--${name} must be a whole number, got "${value}"`);
  return parsed;
}

/** The server's membership ports are base - 300 and up, and stored as a Postgres smallint. */
function temporalPort(value: string | undefined): number {
  const port = positiveInt(value, 'temporal-port', 7233);
  const { min, max } = TEMPORAL_PORT_BASE_RANGE;
  if (port < min || port > max) throw new Error(`--temporal-port must be between ${min} and ${max}, got ${port}`);
  return port;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      apis: { type: 'string' }, workers: { type: 'string' }, 'api-port': { type: 'string' }, 'temporal-port': { type: 'string' },
      'ui-port': { type: 'string' }, 'no-ui': { type: 'boolean' }, storage: { type: 'string' }, 's3-port': { type: 'string' },
      'metrics-port': { type: 'string' }, 'no-metrics': { type: 'boolean' }, 'temporal-db': { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const storage = values.storage ?? 's3';
  if (storage !== 's3' && storage !== 'file') throw new Error(`--storage must be s3 or file, got "${storage}"`);
  const config = loadConfig();
  const started = Date.now();
  const cluster = await startCluster({
    apis: Math.max(1, positiveInt(values.apis, 'apis', 2)),
    workers: Math.max(1, positiveInt(values.workers, 'workers', 2)),
    apiPort: positiveInt(values['api-port'], 'api-port', 3000),
    temporalPort: temporalPort(values['temporal-port']),
    uiPort: values['no-ui'] ? undefined : positiveInt(values['ui-port'], 'ui-port', 8233),
    databaseUrl: config.databaseUrl,
    temporalDatabaseUrl: values['temporal-db'] ?? 'postgres://postgres@127.0.0.1:5432/temporal',
    storage,
    s3Port: positiveInt(values['s3-port'], 's3-port', 7070),
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    dataDir: path.resolve(values['data-dir'] ?? path.join('.data', 'cluster')),
    toolsDir: config.toolsDir,
    metricsPort: values['no-metrics'] ? undefined : positiveInt(values['metrics-port'], 'metrics-port', 9464),
  });
  const lines = [
    `cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    `  Temporal server  ${cluster.temporalAddress} (on Postgres)`,
    ...(cluster.uiUrl ? [`  Temporal Web UI  ${cluster.uiUrl}`] : []),
    `  storage          ${cluster.s3Endpoint ? `S3 gateway ${cluster.s3Endpoint}, bucket imagery` : cluster.env.ASSET_STORE === 's3' ? `S3 ${cluster.env.S3_ENDPOINT}` : `folder ${cluster.env.ASSETS_DIR}`}`,
    ...cluster.apis.map((api) => `  ${api.name.padEnd(16)} ${api.url}  (pid ${api.process.child.pid}, log ${api.logFile}${api.metricsUrl ? `, metrics ${api.metricsUrl}` : ''})`),
    ...cluster.workers.map((w) => `  ${w.name.padEnd(16)} pid ${w.process.child.pid}, log ${w.logFile}${w.metricsUrl ? `, metrics ${w.metricsUrl}` : ''}`),
    'Ctrl-C stops everything.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  let stopping = false;
  for (const part of [...cluster.apis, ...cluster.workers]) {
    void part.process.exited.then((code) => { if (!stopping) log.warn('a cluster process exited', { name: part.name, code }); });
  }
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('stopping the cluster\n');
    await cluster.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

main().catch((err) => {
  process.stderr.write(`cluster failed: ${(err as Error).message}\n\n${USAGE}\n`);
  process.exit(1);
});
