/**
 * The service's figures, each from real OS processes (`node dist/app/main.js api|worker|all`) on the run's own
 * databases and Temporal backend, with the local renderer in its zero-cost mode. Every phase runs on a task queue
 * of its own, so the workflows one phase leaves unstarted never reach another phase's worker.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { ServiceMode, startServiceProcess } from '../ops/cluster/service-process';
import { BENCH_HARNESS_FLAG } from '../src/config';
import { actionWorkflowId, deliveryWorkflowId } from '../src/temporal/contract';
import { freePort } from '../ops/dev-server';
import { httpLoad, inBatches, inTurn, openLoop, warmUp } from './load';
import { startBareStartsFloor, startFloorServer, startOneActivityFloor } from './floors';
import { type CpuSubjects, machineQuiet, measureCpu, subjectsOf } from './cpu';
import { dropFigures, Figures, recordCpu, recordLoad, recordValue } from './measured';
import { rssMiB, track } from './processes';
import { sleep, stat } from './stats';
import type { BenchSettings } from './settings';
import { apiClient, eventually, jpegBase64, newAccount, V1 } from '../test/support/fixtures';
import type { WebhookReceiver } from './webhook-receiver';

export interface ServiceContext {
  settings: BenchSettings;
  db: DataSource;
  databaseUrl: string;
  temporalAddress: string;
  dataDir: string;
  /** Environment of every service process besides what it inherits (see serviceEnv). */
  env: Record<string, string>;
  receiver?: WebhookReceiver;
  /** The JSON body of every POST /generate/photo. */
  photoBody: string;
}

export interface RunningService {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** One service process on its own task queue (at the CPU priority `nice`, if given); registered for cleanup. */
export async function startService(
  ctx: ServiceContext, mode: ServiceMode, name: string, taskQueue: string, extra: Record<string, string> = {}, options: { nice?: number; nodeFlags?: readonly string[] } = {},
): Promise<RunningService> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = await startServiceProcess(mode, {
    ...ctx.env,
    DATABASE_URL: ctx.databaseUrl,
    TEMPORAL_ADDRESS: ctx.temporalAddress,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PORT: String(port),
    PUBLIC_BASE_URL: url,
    DATA_DIR: path.join(ctx.dataDir, name),
    ...extra,
  }, { logFile: path.join(ctx.dataDir, 'logs', `${name}.log`), ...options });
  // Time to drain (its worker finishes the tasks it holds), so that a process stopped does not leave the next phase
  // its workflow tasks to time out and its `starting` actions to settle.
  const stop = track(`service ${name}`, () => started.stop(15_000));
  return { url, pid: started.child.pid!, stop };
}

/** The body of a 2xx answer; anything else throws. */
export async function expectOk(base: string, apiKey: string, method: string, route: string, body?: string): Promise<any> {
  const res = await apiClient(base, apiKey)(method, route, body);
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function countActions(db: DataSource, ids: number[], statuses: string[]): Promise<number> {
  const [row] = await db.query('SELECT count(*)::int AS n FROM actions WHERE id = ANY($1) AND status = ANY($2)', [ids, statuses]);
  return row.n;
}

export const TERMINAL = ['completed', 'failed', 'cancelled'];

interface Account { accountId: number; apiKey: string }

/** An account that never runs out of sparks during a run. */
export const benchAccount = (db: DataSource, name: string): Promise<Account> => newAccount(db, 100_000_000, name);

/** One repetition of an HTTP load on these processes, recorded as `figure` with its CPU per answered request. */
async function measureHttp(figures: Figures, figure: string, options: Parameters<typeof httpLoad>[0], servicePids: number[], databaseUrl: string): Promise<void> {
  const { result, cpu } = await measureCpu(subjectsOf(servicePids, databaseUrl), () => httpLoad(options));
  recordLoad(figures, figure, result);
  recordCpu(figures, figure, cpu, result.ok);
}

/** Polls an action's status until it is completed; returns the milliseconds from the POST to that answer. */
export async function oneJobAlone(base: string, account: Account, photoBody: string): Promise<number> {
  const t = performance.now();
  const posted = await expectOk(base, account.apiKey, 'POST', `${V1}/generate/photo`, photoBody);
  await eventually(() => expectOk(base, account.apiKey, 'GET', `${V1}/status/${posted.action_id}`), (s) => s.status === 'completed' || s.status === 'failed', 60_000, 5);
  return performance.now() - t;
}

/**
 * The main phase, on one API process and one worker process: seeds a completed action and v2 job, then one job
 * alone, jobs per second and webhook deliveries per second, each in turn with its one-activity floor, and, with the
 * worker stopped, the three polls in turn with the poll floor.
 */
export async function measureService(
  ctx: ServiceContext, figures: Figures, inTurnDone: { polls: boolean; oneActivity: boolean } = { polls: false, oneActivity: false },
): Promise<{ apiKey: string; actionId: number }> {
  const queue = 'bench-main';
  const [api, worker] = await Promise.all([startService(ctx, 'api', 'api-main', queue), startService(ctx, 'worker', 'worker-main', queue)]);
  try {
    return await mainPhase(ctx, figures, api, worker, queue, inTurnDone);
  } finally {
    await worker.stop();
    await api.stop();
  }
}

async function mainPhase(
  ctx: ServiceContext, figures: Figures, api: RunningService, worker: RunningService, queue: string, inTurnDone: { polls: boolean; oneActivity: boolean },
): Promise<{ apiKey: string; actionId: number }> {
  const s = ctx.settings;
  const a = await benchAccount(ctx.db, 'bench jobs');
  const b = await benchAccount(ctx.db, 'bench webhooks');

  // Seeds for the polls: a completed v1 action and a succeeded v2 job.
  const seeded = await expectOk(api.url, a.apiKey, 'POST', `${V1}/generate/photo`, ctx.photoBody);
  const job = await expectOk(api.url, a.apiKey, 'POST', '/api/v2/jobs/generate', ctx.photoBody);
  await eventually(() => expectOk(api.url, a.apiKey, 'GET', `${V1}/status/${seeded.action_id}`), (x) => x.status === 'completed', 60_000);
  await eventually(() => expectOk(api.url, a.apiKey, 'GET', `/api/v2/jobs/${job.job_id}`), (x) => x.status === 'succeeded', 60_000);

  // The one-activity floor's runs are taken in turn with the service's, run by run and repetition by repetition,
  // so that both meet the Temporal backend in the same state: minutes apart, the same floor moved by a factor of up
  // to 1.9 between runs (a Temporal server's CPU per workflow drifts with what its Postgres holds).
  const oneActivity = await startOneActivityFloor({ settings: s, databaseUrl: ctx.databaseUrl, temporalAddress: ctx.temporalAddress, logDir: path.join(ctx.dataDir, 'logs') });
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: ctx.temporalAddress });
    const temporal = new Client({ connection, namespace: 'default' });
    /** Until every workflow of these ids is closed, whatever its outcome (the floor's batch is timed to its last result too). */
    const closed = (workflowIds: string[]) => Promise.all(workflowIds.map((id) => temporal.workflow.getHandle(id).result().catch(() => undefined)));

    // One job alone: POST to `completed` seen in status (polled every 5 ms), beside one floor workflow alone.
    await oneActivity.warmUp();
    await oneJobAlone(api.url, a, ctx.photoBody); // warm-up
    const alone: (() => Promise<void>)[] = [
      () => oneActivity.alone(figures),
      async () => recordValue(figures, 'svc.one_job', await oneJobAlone(api.url, a, ctx.photoBody)),
    ];
    for (let i = 0; i < s.singleRuns; i++) for (const run of inTurn(alone, i)) await run();

    // Jobs per second through the one worker process: N enqueued (50 POSTs in flight, as the floor starts its
    // workflows), timed until every action is terminal and its workflow closed (as the floor's batch is timed).
    // Its CPU: the API and worker processes count as the service's.
    const subjects = subjectsOf([api.pid, worker.pid], ctx.databaseUrl);
    const jobs = async () => {
      const t = performance.now();
      const { result: ids, cpu } = await measureCpu(subjects, async () => {
        const ids = await inBatches(s.batch, s.connections, async () => (await expectOk(api.url, a.apiKey, 'POST', `${V1}/generate/photo`, ctx.photoBody)).action_id as number);
        await closed(ids.map(actionWorkflowId));
        await eventually(() => countActions(ctx.db, ids, TERMINAL), (n) => n === ids.length, 600_000, 50);
        return ids;
      });
      const failed = ids.length - await countActions(ctx.db, ids, ['completed']);
      recordValue(figures, 'svc.jobs', ids.length / ((performance.now() - t) / 1000), failed);
      recordCpu(figures, 'svc.jobs', cpu, ids.length);
    };
    const webhooks = await prepareWebhooks(ctx, api.url, b, figures, subjects, closed);
    const batches = [() => oneActivity.batch(figures), jobs, webhooks];
    for (let r = 0; r < s.repeats; r++) for (const run of inTurn(batches, r)) await run();
    inTurnDone.oneActivity = true;
  } finally {
    await connection?.close();
    await oneActivity.stop();
  }

  // Polls with the API process alone (the worker stopped), 50 connections, in turn with the poll floor (repetition
  // by repetition), so that both meet the machine and Postgres in the same state.
  await worker.stop();
  const headers = { Authorization: `Bearer ${a.apiKey}` };
  const floor = await startFloorServer({ databaseUrl: ctx.databaseUrl, temporalAddress: ctx.temporalAddress, logDir: path.join(ctx.dataDir, 'logs') });
  try {
    const polls: [string, string, number][] = [
      ['floor.select', `${floor.url}/select/${seeded.action_id}`, floor.pid], ['svc.status', `${api.url}${V1}/status/${seeded.action_id}`, api.pid],
      ['svc.job', `${api.url}/api/v2/jobs/${job.job_id}`, api.pid], ['svc.balance', `${api.url}${V1}/balance`, api.pid],
    ];
    for (const [, url] of polls) await warmUp({ url, connections: s.connections, durationSec: 1, headers });
    for (let r = 0; r < s.repeats; r++) {
      for (const [key, url, pid] of inTurn(polls, r)) await measureHttp(figures, key, { url, connections: s.connections, durationSec: s.durationSec, headers }, [pid], ctx.databaseUrl);
    }
    inTurnDone.polls = true;
  } finally {
    await floor.stop();
  }

  await measureMemory(ctx, api.url, a, queue, figures);
  return { apiKey: a.apiKey, actionId: seeded.action_id };
}

/**
 * Webhook deliveries per second to a fast local HTTPS receiver: N jobs of an account with a registered webhook
 * make N deliveries; then each run of the function it answers sends all N again at once (the delivery workflow
 * alone, 50 requests in flight, as the floor starts its workflows), timed until the receiver has them all and their
 * workflows are closed (as the floor's batch is timed to its last result).
 */
async function prepareWebhooks(
  ctx: ServiceContext, base: string, account: Account, figures: Figures, subjects: CpuSubjects, closed: (workflowIds: string[]) => Promise<unknown>,
): Promise<() => Promise<void>> {
  const s = ctx.settings;
  const receiver = ctx.receiver;
  if (!receiver) throw new Error('no webhook receiver');
  const hook = await expectOk(base, account.apiKey, 'POST', `${V1}/webhooks`, JSON.stringify({ url: `${receiver.url}/hook`, events: ['generation.completed'] }));
  const received = () => receiver.count('/hook');
  await inBatches(s.batch, s.connections, () => expectOk(base, account.apiKey, 'POST', `${V1}/generate/photo`, ctx.photoBody));
  await eventually(async () => received(), (n) => n >= s.batch, 600_000, 50);
  // The deliveries' ids from the database (the API's delivery log shows the latest 100 only).
  const rows = await eventually(() => ctx.db.query('SELECT id, status FROM webhook_deliveries WHERE webhook_id = $1', [hook.id]) as Promise<{ id: string; status: string }[]>,
    (d) => d.length >= s.batch && d.every((x) => x.status !== 'pending'), 60_000);
  const ids = rows.map((d) => d.id);
  const workflowIds = ids.map(deliveryWorkflowId);
  await closed(workflowIds); // a redelivery needs its delivery's workflow closed
  return async () => {
    const before = received();
    const t = performance.now();
    const { cpu } = await measureCpu(subjects, async () => { // the receiver is in the harness's process
      await inBatches(ids.length, s.connections, (i) => expectOk(base, account.apiKey, 'POST', `${V1}/webhooks/${hook.id}/deliveries/${ids[i]}/redeliver`));
      await eventually(async () => received(), (n) => n >= before + ids.length, 600_000, 20);
      await closed(workflowIds);
    });
    recordValue(figures, 'svc.webhooks', ids.length / ((performance.now() - t) / 1000));
    recordCpu(figures, 'svc.webhooks', cpu, ids.length);
  };
}

/**
 * Worker memory with workflows in flight: a worker serving only the main queue (`WORKER_QUEUES=main`) takes each
 * action's workflow, which hands the render to the provider's queue; nobody serves that queue, so the workflows stay
 * open in the worker. The actions are videos: the local renderer's images render in the workflow's own worker (a
 * local activity), so only its videos wait on its queue, as every action of a remote provider does. A workflow is
 * in flight once the server sees it waiting there (`ActionStatus` processing). RSS is read at each step; per
 * workflow is the growth over the idle worker's RSS.
 */
async function measureMemory(ctx: ServiceContext, base: string, account: Account, queue: string, figures: Figures): Promise<void> {
  const worker = await startService(ctx, 'worker', 'worker-memory', queue, { WORKER_QUEUES: 'main' });
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: ctx.temporalAddress });
    const temporal = new Client({ connection, namespace: 'default' });
    await sleep(2000);
    const idle = rssMiB(worker.pid);
    recordValue(figures, 'mem.idle', idle);
    const video = JSON.stringify({ image: JSON.parse(ctx.photoBody).images[0], duration_sec: 5 });
    const ids: number[] = [];
    for (const target of ctx.settings.inFlightSteps) {
      const more = await inBatches(target - ids.length, 10, async () => (await expectOk(base, account.apiKey, 'POST', `${V1}/generate/video`, video)).action_id as number);
      ids.push(...more);
      const waiting = `TaskQueue = '${queue}' AND ExecutionStatus = 'Running' AND ActionStatus = 'processing'`; // the main phase's are closed
      await eventually(async () => (await temporal.workflow.count(waiting)).count, (n) => n === ids.length, 900_000, 200);
      await sleep(1500); // the last workflow tasks settle
      const rss = rssMiB(worker.pid);
      recordValue(figures, `mem.rss.${target}`, rss);
      recordValue(figures, `mem.per_workflow.${target}`, (rss - idle) / target);
    }
  } finally {
    await connection?.close();
    await worker.stop();
  }
}

/** The share of the bare starts at which `all` mode's slowest request is judged (its target: >= 0.5 of bare starts). */
export const ALL_MODE_PACE = 0.5;

/**
 * POST /generate/photo accepted per second, 50 connections, each request with an `Idempotency-Key` of its own, to a
 * process of `mode` on a queue of its own: `api` (the API process alone: the workflows wait), `all` (`npm start`'s
 * one process, zero-cost renders) or `all-real` (`npm start`'s one process rendering for real meanwhile, without the
 * demo delay: renders must not starve accepting). With `api`, the accept floor (bench/floor-server.ts) and the bare
 * starts (the floor of `all` mode too) are measured in turn with it, repetition by repetition, so all three meet the
 * Temporal backend in the same state (a start costs more as the backend fills with the workflows every phase leaves
 * open: measured in a phase of their own at the start, minutes before, the accept floor reached 0.81 of them in one
 * full run on the Temporal server and 0.52 in the next). With `all`, the saturated
 * repetitions are followed by as many in an open loop at `ALL_MODE_PACE` of the bare starts (`svc.post_all_paced`):
 * 50 closed-loop connections keep 50 requests waiting whatever the service's speed, so their latency is
 * 50 / throughput (Little's law) and says nothing of how long a request waits at the rate the target asks for. The
 * open loop gets a fresh process on a queue of its own: the saturated repetitions leave thousands of jobs queued
 * (their number grows with the repetitions' length), and a figure at a given rate must not depend on how long the
 * phase before it ran; the open loop's own jobs still queue behind the in-process worker as it goes.
 */
export async function measureAccept(
  ctx: ServiceContext, mode: 'api' | 'all' | 'all-real', figures: Figures, inTurnDone: { starts: boolean } = { starts: false },
): Promise<void> {
  const s = ctx.settings;
  const real = mode === 'all-real';
  const service = await startService(ctx, real ? 'all' : mode, `${mode}-accept`, `bench-accept-${mode}`,
    real ? { LOCAL_RENDERER_COST: 'normal', LOCAL_RENDERER_DELAY_MS: '0' } : {});
  const floor = mode === 'api' ? await startFloorServer({ databaseUrl: ctx.databaseUrl, temporalAddress: ctx.temporalAddress, logDir: path.join(ctx.dataDir, 'logs') }) : undefined;
  const bareStarts = mode === 'api' ? await startBareStartsFloor(ctx) : undefined;
  const key = `svc.post_${mode.replace('-', '_')}`;
  try {
    const account = await benchAccount(ctx.db, `bench accept ${mode}`);
    const load = (url: string) => ({ ...photoPosts(ctx, url, account.apiKey), connections: s.connections });
    const accepting = load(`${service.url}${V1}/generate/photo`);
    const http = (figure: string, options: ReturnType<typeof load>, pid: number) => ({
      warmUp: () => warmUp({ ...options, durationSec: 1 }),
      run: () => measureHttp(figures, figure, { ...options, durationSec: s.durationSec }, [pid], ctx.databaseUrl),
    });
    const measured = [http(key, accepting, service.pid)];
    if (floor && bareStarts) {
      dropFigures(figures, ['floor.starts']); // a run without this phase measured them alone (an --only run)
      measured.push(http('floor.accept', load(`${floor.url}/accept`), floor.pid), { warmUp: () => bareStarts.warmUp(), run: () => bareStarts.run(figures) });
    }
    for (const m of measured) await m.warmUp();
    for (let r = 0; r < s.repeats; r++) for (const m of inTurn(measured, r)) await m.run();
    if (bareStarts) inTurnDone.starts = true;
  } finally {
    await bareStarts?.close();
    await floor?.stop();
    await service.stop();
  }
  // `all`: then the rate its target's ratio asks for (half the bare starts measured in this run), offered in an open
  // loop to a fresh process, for its bound on the slowest request.
  const starts = figures['floor.starts'] ? stat(figures['floor.starts'].values) : null;
  if (mode === 'all' && starts) await measurePaced(ctx, figures, Math.ceil(starts.median * ALL_MODE_PACE));
}

/** POSTs of the run's photo body to `url` with this key, each with an `Idempotency-Key` of its own. */
const photoPosts = (ctx: ServiceContext, url: string, apiKey: string) => ({
  url, method: 'POST', body: ctx.photoBody, idempotencyKeys: true,
  headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
});

/** `svc.post_all_paced`: `npm start`'s one process (zero-cost renders), fresh, offered `pace` requests a second. */
async function measurePaced(ctx: ServiceContext, figures: Figures, pace: number): Promise<void> {
  const s = ctx.settings;
  // The saturated repetitions' process is gone, its thousands of jobs left queued: the Temporal backend done with
  // what it was doing for it first, so that the fresh process's first seconds are its own.
  const busy = await machineQuiet();
  process.stderr.write(`bench: the machine at ${busy.toFixed(2)} busy cores before the open loop\n`);
  const service = await startService(ctx, 'all', 'all-paced', 'bench-accept-all-paced');
  try {
    const account = await benchAccount(ctx.db, 'bench accept all paced');
    const accepting = photoPosts(ctx, `${service.url}${V1}/generate/photo`, account.apiKey);
    recordValue(figures, 'svc.post_all_paced_offered', pace);
    await openLoop({ ...accepting, ratePerSecond: pace, durationSec: 1 }); // warm-up, at the same rate
    for (let r = 0; r < s.repeats; r++) recordLoad(figures, 'svc.post_all_paced', await openLoop({ ...accepting, ratePerSecond: pace, durationSec: s.durationSec }));
  } finally {
    await service.stop();
  }
}

export const randomSecret = () => randomBytes(32).toString('hex');

/**
 * What every service process of a run gets besides its database, Temporal address, queue and port (and what it
 * inherits from the bench's launcher: trust in the webhook receiver's certificate, loopback allowed as a target).
 */
export function serviceEnv(dataDir: string): Record<string, string> {
  return {
    ASSET_STORE: 'file',
    ASSETS_DIR: path.join(dataDir, 'assets'),
    ASSET_SIGNING_SECRET: randomSecret(),
    SECRETS_KEY: randomSecret(),
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOCAL_RENDERER_COST: 'zero',
    [BENCH_HARNESS_FLAG]: '1', // what lets a process take LOCAL_RENDERER_COST=zero
    IMAGE_PROVIDER: 'local',
    TEXT_PROVIDER: 'local',
    VIDEO_PROVIDER: 'local',
    // No reconciliation of the actions a phase leaves unstarted on purpose.
    RECONCILE_GRACE_SECONDS: '86400',
  };
}

/** The JSON body of every POST /generate/photo: a small JPEG, 1K, product name and category sent (no analysis). */
export async function photoBody(): Promise<string> {
  return JSON.stringify({ images: [{ data: await jpegBase64() }], product_name: 'Bench cup', category_id: 'home', resolution: '1K' });
}
