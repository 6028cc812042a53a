/**
 * The Temporal CLI dev server: found or built, started with file persistence, the Web UI and our search
 * attributes, and stopped with the process that started it.
 */
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { log } from '../src/log';
import { ensureGoTools, isExecutable, toolPath } from './tools/go-tools';
import { startToolProcess } from './tools/tool-process';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../src/temporal/contract';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const TEMPORAL_CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

/** Lookup order: TEMPORAL_CLI_PATH, a `temporal` on PATH, the tools folder. */
export function findTemporalCli(options: { cliPath?: string; toolsDir: string }): string | undefined {
  if (options.cliPath) {
    if (!isExecutable(options.cliPath)) throw new Error(`TEMPORAL_CLI_PATH=${options.cliPath} is not an executable file`);
    return options.cliPath;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, 'temporal');
    if (isExecutable(candidate)) return candidate;
  }
  const tool = toolPath(options.toolsDir, 'temporal');
  return isExecutable(tool) ? tool : undefined;
}

/** Finds the CLI or builds the pinned version with `go install` into the tools folder. */
export async function ensureTemporalCli(options: { cliPath?: string; toolsDir: string }): Promise<string> {
  const found = findTemporalCli(options);
  if (found) return found;
  try {
    return (await ensureGoTools(options.toolsDir, { packages: [TEMPORAL_CLI_MODULE], binaries: { temporal: 'temporal' } })).temporal;
  } catch (err) {
    throw new Error(
      `${(err as Error).message}. Install the temporal CLI (e.g. "brew install temporal"), set TEMPORAL_CLI_PATH, ` +
      'or point TEMPORAL_ADDRESS at a running server.',
    );
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `count` distinct free ports: each is held until all are found, so two calls cannot hand out the same one. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: count }, () => new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  })));
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}

/** True when a Temporal frontend answers at `address` within the timeout. */
export async function temporalAnswers(address: string, timeoutMs = 1500): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: timeoutMs });
    await connection.workflowService.getSystemInfo({});
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

export interface DevServerOptions {
  cliPath?: string;
  toolsDir: string;
  /** SQLite file; omitted means in memory (tests). */
  dbFile?: string;
  port: number;
  uiPort?: number;
  /** Where the server's own log goes. */
  logFile: string;
  namespace?: string;
}

export interface DevServer {
  address: string;
  uiUrl: string | undefined;
  stop(): Promise<void>;
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const cli = await ensureTemporalCli(options);
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--log-level', 'warn'];
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    // Write-ahead log, synced at every commit: as durable as SQLite's default rollback journal, with one sync per
    // commit instead of several, so the dev server starts about twice as many workflows a second (BENCHMARKS.md).
    args.push('--db-filename', options.dbFile, '--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=full');
  }
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.namespace && options.namespace !== 'default') args.push('--namespace', options.namespace);
  for (const [key, type] of Object.entries(SEARCH_ATTRIBUTE_REGISTRATIONS)) args.push('--search-attribute', `${key}=${type}`);
  // Task priority and fairness (a batch's tasks wait behind interactive ones, accounts share fairly): off by default
  // in server 1.29 (deploy/temporal/dynamicconfig.yaml turns it on for the cluster too).
  args.push('--dynamic-config-value', 'matching.enableFairness=true');

  const address = `127.0.0.1:${options.port}`;
  const { stop } = await startToolProcess({
    name: 'the temporal dev server', binary: cli, args, logFile: options.logFile,
    answers: () => temporalAnswers(address, 1000), readyTimeoutMs: 60_000,
  });
  const uiUrl = options.uiPort ? `http://localhost:${options.uiPort}` : undefined;
  log.info('temporal dev server ready', { address, ui: uiUrl, db: options.dbFile ?? 'memory' });
  return { address, uiUrl, stop };
}
