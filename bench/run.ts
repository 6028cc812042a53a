/**
 * `npm run bench [-- --quick] [-- --backend dev|server|both]`: the service against its own floors, in one run
 * (issue 12). Starts what it needs (its own databases, the Temporal backend, the service as OS processes with the
 * zero-cost renderer, a webhook receiver), measures, writes bench/results.json and BENCHMARKS.md, prints the tables,
 * and stops every process it started, also on failure or Ctrl-C.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { portsAreFree, temporalServerPorts } from '../ops/cluster/cluster';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { dropTemporalDatabases, resetDatabase } from '../test/support/environment';
import { newAccount, placeAction } from '../test/support/fixtures';
import { setLogLevel } from '../src/log';
import { findTemporalCli, freePort, startDevServer } from '../ops/dev-server';
import { startTemporalServer, TEMPORAL_PORT_BASE_RANGE, TEMPORAL_SERVER_VERSION } from '../ops/temporal-server';
import { measureHttpFloors, measureWorkflowFloors } from './floors';
import type { Figures } from './measured';
import { stopAll, track } from './processes';
import { measureIdleStreams } from './live-streams';
import { resolveAnalysis } from './analysis';
import { measureRestart } from './restart';
import { measureStartMemory } from './start-memory';
import { measureLargeDatabase } from './large-database';
import { measureProviderCost } from './provider-cost';
import { measureAcceptItems } from './accept-items';
import { Backend, backendReport, BackendReport, backendTable, renderMarkdown, Report, row } from './report';
import { measureBatch } from './batch';
import { measureAccept, measureService, photoBody, ServiceContext, serviceEnv } from './service';
import { BenchMode, BenchSettings, settingsFor } from './settings';
import { measureDashboardPages } from './dashboard-pages';
import { startWebhookReceiver } from './webhook-receiver';

const ROOT = path.resolve(__dirname, '../..');
const BENCH_DB = 'imagery_bench';
/** The large-database figures' own databases: they measure how the rows' number weighs, not what other phases left. */
const BENCH_SMALL_DB = 'imagery_bench_small';
const BENCH_LARGE_DB = 'imagery_bench_large';
const TEMPORAL_DB = 'temporal_bench';

export const HOW_TO_RUN = [
  'Needs what `npm test` needs (Postgres on `127.0.0.1:5432`, or `BENCH_POSTGRES_URL`; the Temporal CLI and server built into',
  '`TOOLS_DIR` by `npm run setup -- --cluster`). Then:',
  '',
  '```sh',
  'npm run bench                     # full: 5 repetitions of 10 s, 1,000 workflows in flight, both backends (about 35 min on 2 cores)',
  'npm run bench -- --quick          # 1 repetition of 2 s, up to 100 in flight, the dev server only; writes .data/bench/quick/, never this file',
  'npm run bench -- --backend dev    # or server, or both (the default of a full run)',
  'npm run bench -- --quick --only floors,POST   # only the phases whose names hold one of the words (while working on a figure)',
  'npm run bench -- --render         # BENCHMARKS.md again from bench/results.json (after editing bench/analysis.md or bench/changes.md)',
  '```',
  '',
  `It recreates its own databases (\`${BENCH_DB}\`, \`${BENCH_SMALL_DB}\`, \`${BENCH_LARGE_DB}\`, \`${TEMPORAL_DB}\` and \`${TEMPORAL_DB}_visibility\`), keeps its logs under`,
  '`.data/bench/`, and writes `bench/results.json` (every sample) and this file.',
].join('\n');

interface Args { mode: BenchMode; backends: Backend[]; renderOnly: boolean; only?: string }

function parseArgs(argv: string[]): Args {
  let mode: BenchMode = 'full';
  let backends: Backend[] | undefined;
  let renderOnly = false;
  let only: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') mode = 'quick';
    else if (arg === '--only') only = argv[++i];
    else if (arg === '--smoke') mode = 'smoke';
    else if (arg === '--render') renderOnly = true;
    else if (arg === '--backend') {
      const value = argv[++i];
      if (value === 'both') backends = ['dev', 'server'];
      else if (value === 'dev' || value === 'server') backends = [value];
      else throw new Error(`--backend must be dev, server or both, got "${value}"`);
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${HOW_TO_RUN}\n`);
      process.exit(0);
    } else throw new Error(`unknown argument "${arg}" (see --help)`);
  }
  // A quick run measures the dev server only unless told otherwise: both backends take about 3 minutes.
  if (only !== undefined && mode === 'full') throw new Error('--only goes with --quick (a full run measures everything)');
  return { mode, backends: backends ?? (mode === 'full' ? ['dev', 'server'] : ['dev']), renderOnly, only };
}

function databaseUrl(name: string): string {
  const url = new URL(process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/${name}`;
  return url.toString();
}

async function startBackend(backend: Backend, dataDir: string): Promise<{ address: string; stop: () => Promise<void> }> {
  const config = loadConfig();
  if (backend === 'dev') {
    const dev = await startDevServer({
      cliPath: config.temporalCliPath, toolsDir: config.toolsDir, port: await freePort(),
      dbFile: path.join(dataDir, 'temporal-dev.sqlite'), logFile: path.join(dataDir, 'logs', 'temporal-dev-server.log'),
    });
    return { address: dev.address, stop: track('temporal dev server', () => dev.stop()) };
  }
  await dropTemporalDatabases(databaseUrl(TEMPORAL_DB));
  let base: number | undefined;
  for (let candidate = 27233; candidate <= TEMPORAL_PORT_BASE_RANGE.max; candidate += 1100) {
    if (await portsAreFree(temporalServerPorts(candidate))) {
      base = candidate;
      break;
    }
  }
  if (base === undefined) throw new Error(`no free port range for the Temporal server at or under ${TEMPORAL_PORT_BASE_RANGE.max}`);
  const server = await startTemporalServer({
    toolsDir: config.toolsDir, db: { url: databaseUrl(TEMPORAL_DB) }, portBase: base,
    logFile: path.join(dataDir, 'logs', 'temporal-server.log'), namespace: 'default',
  });
  return { address: server.address, stop: track('temporal server', () => server.stop()) };
}

/** The phases `--only` lets through (by a part of their names); the Temporal backend and databases always start. */
let onlyPhases: string | undefined;

/** Runs one phase; a failure is written down and the run goes on with the next phase. */
async function phase(name: string, notes: string[], run: () => Promise<void>): Promise<void> {
  if (onlyPhases !== undefined && !onlyPhases.split(',').some((word) => name.includes(word)) && !name.includes('start the Temporal backend')) return;
  const t = Date.now();
  process.stderr.write(`bench: ${name}...\n`);
  try {
    await run();
    process.stderr.write(`bench: ${name} done in ${((Date.now() - t) / 1000).toFixed(1)} s\n`);
  } catch (err) {
    const message = `${name} failed, its figures are not measured: ${(err as Error).message.split('\n')[0]}`;
    notes.push(message);
    process.stderr.write(`bench: ${message}\n${(err as Error).stack}\n`);
  }
}

async function benchBackend(backend: Backend, settings: BenchSettings, dataDir: string, receiver: ServiceContext['receiver']): Promise<BackendReport> {
  const figures: Figures = {};
  const notes: string[] = [];
  const databaseUrlOfService = databaseUrl(BENCH_DB);
  const backendDir = path.join(dataDir, backend);
  let temporal: { address: string; stop: () => Promise<void> } | undefined;
  try {
    await phase(`${backend}: start the Temporal backend and the databases`, notes, async () => {
      [temporal] = await Promise.all([startBackend(backend, backendDir), resetDatabase(databaseUrlOfService)]); // new and migrated
    });
    if (!temporal) return backendReport(backend, figures, settings, notes);
    const db = await openDatabase(databaseUrlOfService, { migrate: false, poolSize: 4 });
    const stopDb = track('bench database pool', () => db.destroy());
    try {
      const ctx: ServiceContext = {
        settings, db, databaseUrl: databaseUrlOfService, temporalAddress: temporal.address, dataDir: backendDir, receiver,
        photoBody: await photoBody(),
        env: serviceEnv(backendDir),
      };
      const floorCtx = {
        settings, databaseUrl: databaseUrlOfService, temporalAddress: temporal.address, logDir: path.join(backendDir, 'logs'), apiKey: '', actionId: 0,
      };
      // Each floor is measured in turn with the service's figures it judges, by their phases: the one-activity and
      // poll floors by the service phase, the accept floor and the bare starts by the API process's accept phase. The
      // floor phases measure them alone only when that did not happen (an --only run, or a phase that failed before
      // they were done).
      const inTurn = { polls: false, oneActivity: false, starts: false };
      await phase(`${backend}: service (one job, jobs/s, webhooks, polls, memory)`, notes, async () => {
        const seeded = await measureService(ctx, figures, inTurn);
        floorCtx.apiKey = seeded.apiKey;
        floorCtx.actionId = seeded.actionId;
      });
      if (!inTurn.oneActivity) {
        await phase(`${backend}: workflow floors (one activity, alone)`, notes, () => measureWorkflowFloors(floorCtx, figures, { starts: false, oneActivity: true }));
      }
      await phase(`${backend}: a catalogue batch of ${settings.batchItems} photos, an interactive photo and polls meanwhile`, notes, () => measureBatch(ctx, figures));
      await phase(`${backend}: HTTP floors`, notes, async () => {
        if (!floorCtx.apiKey) { // the service phase did not run (--only): a key and an action of its own
          const account = await newAccount(db, 100_000_000, 'bench floors');
          Object.assign(floorCtx, { apiKey: account.apiKey, actionId: await placeAction(db, account.accountId) });
        }
        await measureHttpFloors(floorCtx, figures, { select: !inTurn.polls });
      });
      await phase(`${backend}: POST /generate/photo, API process alone, in turn with the accept floor and bare starts`, notes, () => measureAccept(ctx, 'api', figures, inTurn));
      if (!inTurn.starts) { // before `all` mode, whose target and open loop are judged against them
        await phase(`${backend}: workflow floors (bare starts, alone)`, notes, () => measureWorkflowFloors(floorCtx, figures, { starts: true, oneActivity: false }));
      }
      await phase(`${backend}: POST /generate/photo, all mode`, notes, () => measureAccept(ctx, 'all', figures));
      await phase(`${backend}: POST /generate/photo, all mode, real renders meanwhile`, notes, () => measureAccept(ctx, 'all-real', figures));
      await phase(`${backend}: ${settings.idleStreams} idle live-progress streams`, notes, () => measureIdleStreams(ctx, figures));
      if (backend === 'dev') {
        await phase('dev: npm start of an unchanged checkout, to healthy', notes, () => measureRestart(ctx, figures, settings.restartRuns));
        await phase(`dev: npm start's memory through ${settings.burstJobs} real renders`, notes, () => measureStartMemory(ctx, figures, settings.burstJobs));
        await phase(`dev: the dashboard's pages with ${settings.dashboardActions} actions`, notes,
          () => measureDashboardPages(ctx, figures, settings.dashboardActions, settings.dashboardRuns));
        await phase(`dev: the figures again on ${settings.largeActions} actions`, notes, async () => {
          const [smallUrl, largeUrl] = [databaseUrl(BENCH_SMALL_DB), databaseUrl(BENCH_LARGE_DB)];
          await Promise.all([resetDatabase(smallUrl), resetDatabase(largeUrl)]);
          const smallDb = await openDatabase(smallUrl, { migrate: false, poolSize: 4 });
          try {
            const largeDb = await openDatabase(largeUrl, { migrate: false, poolSize: 4 });
            try {
              await measureLargeDatabase({ ...ctx, db: smallDb, databaseUrl: smallUrl }, { ...ctx, db: largeDb, databaseUrl: largeUrl },
                figures, settings.largeActions, settings.largeAccounts);
            } finally {
              await largeDb.destroy();
            }
          } finally {
            await smallDb.destroy();
          }
        });
      }
      // Last: its starts stay open on a queue nobody serves (a dev server's start costs more as it fills).
      await phase(`${backend}: the accept's parts beyond its floor, measured apart`, notes,
        () => measureAcceptItems({ ...ctx, dataDir: backendDir }, figures, settings.repeats, settings.acceptItemRuns));
    } finally {
      await stopDb();
    }
  } finally {
    await temporal?.stop();
  }
  notes.push(backend === 'dev'
    ? 'The dev server keeps its state in a SQLite file (as `npm start` runs it).'
    : `The Temporal server ${TEMPORAL_SERVER_VERSION} on Postgres (\`${TEMPORAL_DB}\`), 4 history shards, the project's deploy/temporal config.`);
  return backendReport(backend, figures, settings, notes);
}

function versions(): Record<string, string> {
  const config = loadConfig();
  let cli = 'not found';
  try {
    const binary = findTemporalCli({ cliPath: config.temporalCliPath, toolsDir: config.toolsDir });
    if (binary) cli = execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
  } catch (err) {
    cli = `unknown (${(err as Error).message})`;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pkg = (name: string) => (require(`${name}/package.json`) as { version: string }).version;
  return {
    node: process.version,
    'Temporal CLI (dev server)': cli,
    'Temporal server': TEMPORAL_SERVER_VERSION,
    'Temporal TypeScript SDK': pkg('@temporalio/worker'),
    autocannon: pkg('autocannon'),
  };
}

async function postgresVersion(): Promise<string> {
  const client = new Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    return (await client.query('SHOW server_version')).rows[0].server_version;
  } finally {
    await client.end();
  }
}

/**
 * Where a run writes: a full run the committed `bench/results.json` and `BENCHMARKS.md`; a quick or smoke run files of
 * its own under `.data/bench/<mode>/`, never the committed ones.
 */
function outputsOf(mode: string): { results: string; markdown: string } {
  if (mode === 'full') return { results: path.join(ROOT, 'bench', 'results.json'), markdown: path.join(ROOT, 'BENCHMARKS.md') };
  const dir = path.join(ROOT, '.data', 'bench', mode);
  mkdirSync(dir, { recursive: true });
  return { results: path.join(dir, 'results.json'), markdown: path.join(dir, 'BENCHMARKS.md') };
}

/**
 * BENCHMARKS.md from a report: the figures, then the analysis generated from them (bench/analysis.md, every figure a
 * placeholder of this run: bench/analysis.ts), then what each change bought, measured in runs of its own (bench/changes.md).
 */
function writeMarkdown(report: Report, file: string): void {
  const read = (name: string) => (existsSync(path.join(ROOT, 'bench', name)) ? readFileSync(path.join(ROOT, 'bench', name), 'utf8') : '');
  const analysis = [resolveAnalysis(read('analysis.md'), report), read('changes.md')].filter((text) => text.trim()).join('\n');
  writeFileSync(file, renderMarkdown(report, HOW_TO_RUN, analysis));
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.renderOnly) {
    const { results, markdown } = outputsOf('full');
    writeMarkdown(JSON.parse(readFileSync(results, 'utf8')) as Report, markdown);
    process.stdout.write('wrote BENCHMARKS.md from bench/results.json\n');
    return;
  }
  setLogLevel('warn');
  onlyPhases = args.only;
  const started = Date.now();
  const settings = settingsFor(args.mode);
  const dataDir = path.join(ROOT, '.data', 'bench');
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const notes: string[] = [];

  const providerFigures: Figures = {};
  await phase('provider cost (local renderer, normal mode)', notes, () => measureProviderCost(settings.providerRepeats, providerFigures, args.mode === 'full'));
  const receiver = await startWebhookReceiver();
  const backends: BackendReport[] = [];
  for (const backend of args.backends) backends.push(await benchBackend(backend, settings, dataDir, receiver));

  const report: Report = {
    mode: args.mode,
    date: new Date().toISOString(),
    durationSec: (Date.now() - started) / 1000,
    machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.availableParallelism(), memoryGiB: os.totalmem() / 2 ** 30, os: `${os.type()} ${os.release()} ${os.arch()}` },
    versions: { ...versions(), Postgres: await postgresVersion() },
    settings: { ...settings },
    providerCostMs: ['provider.photo', 'provider.card', 'provider.edit', 'provider.video'].map((k) => row(providerFigures, k)),
    backends,
    notes: [
      'Load comes from the harness process over loopback (autocannon, keep-alive connections; the Temporal client for workflow starts), on the same 2 cores as the service: every figure includes the load generator\'s share of the CPU, and so does its floor.',
      'Jobs are v1 photo actions (`POST /generate/photo`, 1K, product name and category sent, so no analysis); "finished" means the action is terminal in Postgres. The zero-cost render mode (`LOCAL_RENDERER_COST=zero`) returns a precomputed 64x64 JPEG, so the orchestration is measured without the provider.',
      'Jobs per second and the one-activity floor are timed from the first enqueue until the last workflow closed (and, for jobs, every action terminal in Postgres), batches of the same size, 50 requests or starts in flight on both sides, the worker already running; the floor\'s runs are taken in turn with the service\'s (one alone beside one job alone, a batch beside each batch of jobs and of webhook deliveries, the order rotating and every other cycle reversed), its worker and the service\'s both running and idle while the other works.',
      'Webhook deliveries per second: all deliveries of N completed jobs redelivered at once (POST .../redeliver, 50 in flight), timed until the receiver has them all and their workflows are closed; each is one delivery workflow.',
      'Idle live-progress streams: an API process alone (no worker: every action stays pending, its stream idle after its first event), one stream per action, 100 per API key (the default limit); the actions made through another API process, so that the measured one is fresh, warmed by 20 polls and 20 streams opened and closed; RSS read from /proc once it settled, and again with every stream open.',
      'Memory: a worker serving only the main queue (`WORKER_QUEUES=main`) holds video actions\' workflows at their render step (the provider queue is not served; the local renderer\'s images render in the worker itself); RSS read from /proc, per workflow = (RSS - idle RSS) / workflows.',
      ...notes,
    ],
  };
  const { results, markdown } = outputsOf(args.mode);
  writeFileSync(results, `${JSON.stringify(report, null, 2)}\n`);
  writeMarkdown(report, markdown);
  for (const b of backends) process.stdout.write(`\n## ${b.backend}\n\n${backendTable(b)}\n`);
  process.stdout.write(`\nwrote ${path.relative(ROOT, results)} and ${path.relative(ROOT, markdown)} (${Math.round(report.durationSec)} s)\n`);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`bench: ${signal}, stopping everything it started\n`);
    void stopAll().finally(() => process.exit(130));
  });
}

main()
  .then(() => stopAll())
  .then(() => process.exit(0))
  .catch(async (err) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
    await stopAll();
    process.exit(1);
  });
