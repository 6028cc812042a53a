/**
 * The Temporal server itself (not the dev server) on Postgres, as the production topology runs it: the pinned
 * server and its SQL tool built from the Go module proxy, the schema of both databases set up and upgraded with the
 * tool from the versioned folders the server module ships, the server run from the project's own config
 * (`deploy/temporal/config/postgres.yaml`), and the namespace with our search attributes registered.
 */
import { ChildProcess, execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { Client } from 'pg';
import { ensureDatabaseExists } from '../src/db/data-source';
import { log } from '../src/log';
import { ensureGoTools, toolEnv } from './tools/go-tools';
import { startToolProcess } from './tools/tool-process';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../src/temporal/contract';
import { temporalAnswers } from './dev-server';

export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
const SERVER_MODULE = 'go.temporal.io/server';
const run = promisify(execFile);
const GRPC_ALREADY_EXISTS = 6;

/** `deploy/temporal` of the project: the server's config folder (`config/postgres.yaml`) and dynamic config. */
export const TEMPORAL_DEPLOY_DIR = path.resolve(__dirname, '../../deploy/temporal');

export async function ensureTemporalServer(toolsDir: string): Promise<{ server: string; sqlTool: string }> {
  const built = await ensureGoTools(toolsDir, {
    packages: [`${SERVER_MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`, `${SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`],
    binaries: { server: `temporal-server-${TEMPORAL_SERVER_VERSION}`, sql: `temporal-sql-tool-${TEMPORAL_SERVER_VERSION}` },
  });
  return { server: built.server, sqlTool: built.sql };
}

/** The folder of a Go module at a version in the module cache (downloaded if missing): schema files, sample configs. */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', `${module}@${version}`], { cwd: '/', maxBuffer: 1024 * 1024 });
  const dir = (JSON.parse(stdout) as { Dir?: string; Error?: string });
  if (!dir.Dir) throw new Error(`go mod download ${module}@${version}: ${dir.Error ?? 'no folder'}`);
  return dir.Dir;
}

/** Where the server keeps its state: two Postgres databases, `<name>` and `<name>_visibility` by default. */
export interface TemporalDatabase {
  /**
   * e.g. `postgres://temporal:secret@db.internal:5432/temporal?sslmode=verify-full&sslrootcert=/etc/ca.pem`:
   * `sslmode` require, verify-ca or verify-full turns TLS on (host names checked with verify-full).
   */
  url: string;
  /** The visibility database's name (default: the main one's name + `_visibility`). */
  visibilityDatabase?: string;
}

/** libpq's `sslmode` values that make a TLS connection (`prefer` and `allow` may not: they are treated as off). */
const TLS_MODES = ['require', 'verify-ca', 'verify-full'];

function databaseParts(db: TemporalDatabase) {
  const url = new URL(db.url);
  const database = decodeURIComponent(url.pathname.slice(1)) || 'temporal';
  const sslmode = url.searchParams.get('sslmode') ?? 'disable';
  return {
    host: url.hostname,
    port: url.port || '5432',
    user: decodeURIComponent(url.username) || 'postgres',
    password: decodeURIComponent(url.password),
    database,
    visibilityDatabase: db.visibilityDatabase ?? `${database}_visibility`,
    tls: TLS_MODES.includes(sslmode),
    verifyHost: sslmode === 'verify-full',
    caFile: url.searchParams.get('sslrootcert') ?? '',
  };
}

async function hasSchemaVersionTable(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ found: string | null }>(`SELECT to_regclass('schema_version')::text AS found`);
    return rows[0].found !== null;
  } finally {
    await client.end();
  }
}

/**
 * Creates both databases when missing and brings their schemas to the version this server needs: `setup-schema
 * -v 0.0` on a new database only (on an existing one it would reset the recorded version), then `update-schema`
 * over the module's versioned folders, which applies only the versions not yet applied. Safe to run at every start.
 */
export async function setUpTemporalSchema(sqlTool: string, db: TemporalDatabase): Promise<void> {
  const parts = databaseParts(db);
  const schemaRoot = path.join(await goModuleDir(SERVER_MODULE, TEMPORAL_SERVER_VERSION), 'schema/postgresql/v12');
  for (const [database, folder] of [[parts.database, 'temporal'], [parts.visibilityDatabase, 'visibility']] as const) {
    const url = new URL(db.url);
    url.pathname = `/${encodeURIComponent(database)}`;
    await ensureDatabaseExists(url.toString());
    const common = [
      '--plugin', 'postgres12', '--ep', parts.host, '-p', parts.port, '-u', parts.user, '--db', database,
      ...(parts.tls ? ['--tls', ...(parts.caFile ? ['--tls-ca-file', parts.caFile] : []), ...(parts.verifyHost ? [] : ['--tls-disable-host-verification'])] : []),
    ];
    const env = toolEnv({ SQL_PASSWORD: parts.password });
    if (!(await hasSchemaVersionTable(url.toString()))) await run(sqlTool, [...common, 'setup-schema', '-v', '0.0'], { env });
    await run(sqlTool, [...common, 'update-schema', '-d', path.join(schemaRoot, folder, 'versioned')], { env, maxBuffer: 16 * 1024 * 1024 });
  }
  log.info('temporal schema ready', { database: parts.database, visibility: parts.visibilityDatabase });
}

/**
 * The frontend port `portBase` the others follow (deploy/temporal/config/postgres.yaml): membership ports from
 * base - 300, stored by the server as a Postgres smallint, so the base stays within these bounds.
 */
export const TEMPORAL_PORT_BASE_RANGE = { min: 1024, max: 32_000 } as const;
/** The metrics port, from the base. */
export const METRICS_PORT_OFFSET = 767;

export interface TemporalServerOptions {
  toolsDir: string;
  db: TemporalDatabase;
  /** Frontend gRPC port; the other services follow it (see the config file). */
  portBase: number;
  bindIp?: string;
  /** By default `portBase + METRICS_PORT_OFFSET`. */
  metricsPort?: number;
  logFile: string;
  namespace: string;
  /** History shards: fixed forever once the databases are first used. */
  historyShards?: number;
}

export interface TemporalServer {
  address: string;
  child: ChildProcess;
  /** SIGTERM, then SIGKILL after 15 s. */
  stop(): Promise<void>;
}

/** Builds what is missing, sets up the schema, starts the server, and registers the namespace and search attributes. */
export async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServer> {
  const { min, max } = TEMPORAL_PORT_BASE_RANGE;
  if (options.portBase < min || options.portBase > max) throw new Error(`the Temporal server's port base must be between ${min} and ${max}, got ${options.portBase}`);
  const { server, sqlTool } = await ensureTemporalServer(options.toolsDir);
  await setUpTemporalSchema(sqlTool, options.db);
  const parts = databaseParts(options.db);
  const bindIp = options.bindIp ?? '127.0.0.1';
  const address = `${bindIp}:${options.portBase}`;
  const { child, stop } = await startToolProcess({
    name: 'the Temporal server',
    binary: server,
    args: ['--root', TEMPORAL_DEPLOY_DIR, '--config', 'config', '--env', 'postgres', '--allow-no-auth', 'start'],
    env: {
      TEMPORAL_PORT_BASE: String(options.portBase),
      TEMPORAL_BIND_IP: bindIp,
      TEMPORAL_METRICS_PORT: String(options.metricsPort ?? options.portBase + METRICS_PORT_OFFSET),
      TEMPORAL_DB_HOST: parts.host,
      TEMPORAL_DB_PORT: parts.port,
      TEMPORAL_DB_USER: parts.user,
      TEMPORAL_DB_PASSWORD: parts.password,
      TEMPORAL_DB: parts.database,
      TEMPORAL_VISIBILITY_DB: parts.visibilityDatabase,
      TEMPORAL_DB_TLS: String(parts.tls),
      TEMPORAL_DB_TLS_VERIFY_HOST: String(parts.verifyHost),
      TEMPORAL_DB_TLS_CA_FILE: parts.caFile,
      TEMPORAL_NUM_HISTORY_SHARDS: String(options.historyShards ?? 4),
      TEMPORAL_DYNAMIC_CONFIG_FILE: path.join(TEMPORAL_DEPLOY_DIR, 'dynamicconfig.yaml'),
    },
    logFile: options.logFile,
    answers: () => temporalAnswers(address, 1000),
    readyTimeoutMs: 90_000,
    pollMs: 250,
    stopGraceMs: 15_000,
  });
  try {
    await prepareNamespace(address, options.namespace);
  } catch (err) {
    await stop();
    throw err;
  }
  log.info('temporal server ready', { address, version: TEMPORAL_SERVER_VERSION, database: parts.database });
  return { address, child, stop };
}

const INDEXED_TYPES = {
  Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
} as const;

/**
 * The namespace (3 days of retention) and the search attributes the workflows set, each created only when missing,
 * then awaited until the frontend serves them (its namespace cache refreshes every few seconds).
 */
export async function prepareNamespace(address: string, namespace: string, retentionDays = 3): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const service = connection.workflowService;
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(retentionDays * 86_400_000) })
      .catch((err) => { if (!isGrpcServiceError(err) || err.code !== GRPC_ALREADY_EXISTS) throw err; });
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = Object.entries(SEARCH_ATTRIBUTE_REGISTRATIONS).filter(([name]) => !(name in (existing.customAttributes ?? {})));
    if (missing.length > 0) {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, INDEXED_TYPES[type]])),
      });
    }
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        // Visible to queries that use every attribute: the namespace is served and the attributes are known.
        await service.countWorkflowExecutions({
          namespace,
          query: Object.keys(SEARCH_ATTRIBUTE_REGISTRATIONS).map((name) => `${name} IS NULL`).join(' AND '),
        });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`namespace ${namespace} not served within 60 s: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}
