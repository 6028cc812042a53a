/**
 * The floors, measured in the same run as the service: what bare Koa answers (a constant; the key lookup plus one
 * indexed select), what the Temporal server starts (a trivial workflow, 50 in flight), and what one default worker
 * runs (a one-activity workflow alone, end to end, and a batch of them).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { freePort } from '../ops/dev-server';
import { closedLoop, httpLoad, inBatches, warmUp } from './load';
import { measureCpu, subjectsOf } from './cpu';
import { dropFigures, Figures, recordCpu, recordLoad, recordValue } from './measured';
import { startBenchChild } from './processes';
import type { BenchSettings } from './settings';

export interface FloorContext {
  settings: BenchSettings;
  databaseUrl: string;
  temporalAddress: string;
  logDir: string;
  /** An API key and one of its account's action ids, for the select floor. */
  apiKey: string;
  actionId: number;
}

/** The floor server (bench/floor-server.ts): bare Koa on a raw pool in its own process. */
export async function startFloorServer(ctx: Pick<FloorContext, 'databaseUrl' | 'temporalAddress' | 'logDir'>): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const server = await startBenchChild('floor-server.js', [ctx.databaseUrl, ctx.temporalAddress, String(port)], path.join(ctx.logDir, 'floor-server.log'));
  return { url: `http://127.0.0.1:${port}`, pid: server.pid, stop: () => server.stop() };
}

/**
 * The HTTP floors `floor.const` and, with `select` (when the service phase did not measure it in turn with the
 * polls, bench/service.ts), `floor.select` (the poll floor). The accept floor is measured in turn with the service's
 * accepts (measureAccept), on the same Temporal backend in the same state.
 */
export async function measureHttpFloors(ctx: FloorContext, figures: Figures, options: { select: boolean } = { select: true }): Promise<void> {
  const server = await startFloorServer(ctx);
  try {
    const { connections, durationSec, repeats } = ctx.settings;
    const headers = { Authorization: `Bearer ${ctx.apiKey}` };
    const { select } = options;
    if (select) dropFigures(figures, ['floor.select']); // samples of a service phase that failed before its polls were done
    await warmUp(select ? { url: `${server.url}/select/${ctx.actionId}`, connections, durationSec: 1, headers } : { url: `${server.url}/const`, connections, durationSec: 1 });
    for (let r = 0; r < repeats; r++) {
      recordLoad(figures, 'floor.const', await httpLoad({ url: `${server.url}/const`, connections, durationSec }));
      if (select) recordLoad(figures, 'floor.select', await httpLoad({ url: `${server.url}/select/${ctx.actionId}`, connections, durationSec, headers }));
    }
  } finally {
    await server.stop();
  }
}

/**
 * Workflow starts with nobody to run them (`floor.starts`) and a default worker's one-activity runs, alone
 * (`floor.e2e`) and in batches (`floor.batch`), each alone; a run with the service measures them in turn with its
 * own figures instead (bench/service.ts: the starts with the accepts of the API process alone, the one-activity runs
 * with the jobs, webhooks and one job alone), and this only when that did not happen.
 */
export async function measureWorkflowFloors(ctx: FloorContext, figures: Figures, parts: { starts: boolean; oneActivity: boolean } = { starts: true, oneActivity: true }): Promise<void> {
  if (parts.starts) {
    dropFigures(figures, ['floor.starts']);
    await measureBareStarts(ctx, figures);
  }
  if (!parts.oneActivity) return;
  dropFigures(figures, ['floor.e2e', 'floor.batch']);
  const floor = await startOneActivityFloor(ctx);
  try {
    await floor.warmUp();
    for (let i = 0; i < ctx.settings.singleRuns; i++) await floor.alone(figures);
    for (let r = 0; r < ctx.settings.repeats; r++) await floor.batch(figures);
  } finally {
    await floor.stop();
  }
}

/** Bare starts, alone (a run without the service's accept phase, which takes them in turn with its accepts). */
async function measureBareStarts(ctx: FloorContext, figures: Figures): Promise<void> {
  const floor = await startBareStartsFloor(ctx);
  try {
    await floor.warmUp();
    for (let r = 0; r < ctx.settings.repeats; r++) await floor.run(figures);
  } finally {
    await floor.close();
  }
}

/**
 * The bare-start floor: a no-op workflow started with 50 in flight for the run's duration on a queue no worker
 * serves (the workflows pile up there), from this process's own client (`floor.starts`, with its CPU; the starting
 * client counts as the harness). The client is the SDK's native one (a NativeConnection), the cheaper of the two a
 * start can go through, as `npm start`'s process does (src/temporal/client.ts).
 */
export interface BareStartsFloor {
  warmUp(): Promise<void>;
  run(figures: Figures): Promise<void>;
  close(): Promise<void>;
}

export async function startBareStartsFloor(ctx: Pick<FloorContext, 'settings' | 'databaseUrl' | 'temporalAddress'>): Promise<BareStartsFloor> {
  const connection = await NativeConnection.connect({ address: ctx.temporalAddress });
  const client = new Client({ connection, namespace: 'default' });
  const { connections, durationSec } = ctx.settings;
  const runId = randomUUID().slice(0, 8);
  const start = (i: number) => client.workflow.start('benchNoopWorkflow', { taskQueue: 'bench-floor-unserved', workflowId: `floor-start-${runId}-${i}` });
  const subjects = subjectsOf([], ctx.databaseUrl);
  let offset = 0;
  return {
    // Negative ids never collide with the measured ones.
    warmUp: async () => { await closedLoop(connections, 1000, (i) => start(-1 - i)); },
    async run(figures) {
      const { result, cpu } = await measureCpu(subjects, () => closedLoop(connections, durationSec * 1000, (i) => start(offset + i)));
      offset += result.ok + result.failed + connections;
      recordLoad(figures, 'floor.starts', result);
      recordCpu(figures, 'floor.starts', cpu, result.ok);
    },
    close: () => connection.close(),
  };
}

/**
 * The one-activity floor: a default worker in a process of its own on a queue of its own, kept running so that its
 * runs can be taken in turn with the service's (bench/service.ts). `alone` records one workflow end to end
 * (`floor.e2e`), `batch` a batch started 50 at a time and timed until the last result (`floor.batch`, with its CPU:
 * the floor worker counts as the service process of its row, the starting client as the harness).
 */
export interface OneActivityFloor {
  warmUp(): Promise<void>;
  alone(figures: Figures): Promise<void>;
  batch(figures: Figures): Promise<void>;
  stop(): Promise<void>;
}

export async function startOneActivityFloor(ctx: Pick<FloorContext, 'settings' | 'databaseUrl' | 'temporalAddress' | 'logDir'>): Promise<OneActivityFloor> {
  const runId = randomUUID().slice(0, 8);
  const taskQueue = `bench-floor-${runId}`;
  const connection = await Connection.connect({ address: ctx.temporalAddress });
  let worker: Awaited<ReturnType<typeof startBenchChild>>;
  try {
    worker = await startBenchChild('floor-worker.js', [ctx.temporalAddress, taskQueue], path.join(ctx.logDir, `floor-worker-${runId}.log`));
  } catch (err) {
    await connection.close();
    throw err;
  }
  const client = new Client({ connection, namespace: 'default' });
  const run = (id: string, n: number) => client.workflow.execute('benchOneActivityWorkflow', { taskQueue, workflowId: `floor-e2e-${runId}-${id}`, args: [n] });
  // The floor worker uses no database: the service's, idle beside it when taken in turn, is not the floor's work.
  const subjects = subjectsOf([worker.pid], ctx.databaseUrl, { databaseIdle: true });
  const { batch: size, connections } = ctx.settings;
  let runs = 0;
  return {
    warmUp: async () => { await run('warm', 0); },
    async alone(figures) {
      const t = performance.now();
      await run(`alone-${runs}`, runs++);
      recordValue(figures, 'floor.e2e', performance.now() - t);
    },
    async batch(figures) {
      const r = runs++;
      const t = performance.now();
      const { cpu } = await measureCpu(subjects, async () => {
        const handles = await inBatches(size, connections, (i) =>
          client.workflow.start('benchOneActivityWorkflow', { taskQueue, workflowId: `floor-batch-${runId}-${r}-${i}`, args: [i] }));
        await Promise.all(handles.map((h) => h.result()));
      });
      recordValue(figures, 'floor.batch', size / ((performance.now() - t) / 1000));
      recordCpu(figures, 'floor.batch', cpu, size);
    },
    async stop() {
      try {
        await worker.stop();
      } finally {
        await connection.close();
      }
    },
  };
}
