/**
 * A catalogue batch through one API process and one batch worker (zero-cost renderer), beside a worker of the
 * interactive queues, as docs/operations.md lays out a machine shared by both: the batch worker serves only the batch
 * queue (`WORKER_QUEUES=batch`) at the lowest CPU priority (`nice -n 19`) with its heap limits (`npm run
 * start:batch-worker`: BATCH_WORKER_NODE_FLAGS), the other one the main and `local` queues.
 * N photo items sent as NDJSON (their image one upload, pinned), timed from the POST until the batch has ended
 * (`svc.batch`, items per second, with its CPU: the API and both worker processes count as the service's).
 * Meanwhile: the batch worker's RSS every half second (`svc.batch_rss`: the most over its idle RSS), and, once a tenth
 * of the items are done, interactive photos one at a time (`svc.batch_photo`, POST to `completed`, against
 * `svc.batch_photo_idle` measured before the batch) and `GET /status` polls (`svc.batch_status`, against
 * `svc.batch_status_idle`). After: the longest history among the batch workflow's runs (`svc.batch_history`, events).
 * It begins once the phases before have left no interactive demand (a batch yields to it: docs/design.md).
 */
import { Client, Connection } from '@temporalio/client';
import { BATCH_WORKER_NODE_FLAGS } from '../ops/cluster/service-process';
import { demandOf, readInteractiveDemand } from '../src/batches/interactive-demand';
import { batchWorkflowId } from '../src/temporal/contract';
import { eventually, V1 } from '../test/support/fixtures';
import { measureCpu, subjectsOf } from './cpu';
import { httpLoad, warmUp } from './load';
import { Figures, recordCpu, recordLoad, recordValue } from './measured';
import { rssMiB } from './processes';
import { benchAccount, expectOk, oneJobAlone, type ServiceContext, startService } from './service';
import { sleep } from './stats';

/** The batch worker's CPU priority: the lowest, so that it runs on what interactive work leaves of the cores. */
const BATCH_WORKER_NICE = 19;

export async function measureBatch(ctx: ServiceContext, figures: Figures): Promise<void> {
  const s = ctx.settings;
  const queue = 'bench-batch';
  const [api, interactive, worker] = await Promise.all([
    startService(ctx, 'api', 'api-batch', queue),
    startService(ctx, 'worker', 'worker-interactive', queue, { WORKER_QUEUES: 'main,local' }),
    startService(ctx, 'worker', 'worker-batch', queue, { WORKER_QUEUES: 'batch' }, { nice: BATCH_WORKER_NICE, nodeFlags: BATCH_WORKER_NODE_FLAGS }),
  ]);
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: ctx.temporalAddress });
    const temporal = new Client({ connection, namespace: 'default' });
    // A quiet service first: the phases before leave interactive jobs in progress (the memory phase's 1,000 videos,
    // whose worker is gone), which a batch yields to for their first two minutes, as it yields to any.
    const quietSince = performance.now();
    await eventually(() => readInteractiveDemand(ctx.db.manager), (demand) => demandOf(demand) === 0, 300_000, 500);
    process.stderr.write(`bench: the batch waited ${((performance.now() - quietSince) / 1000).toFixed(1)} s for no interactive demand\n`);
    const account = await benchAccount(ctx.db, 'bench batch');
    const headers = { Authorization: `Bearer ${account.apiKey}` };
    const photo = JSON.parse(ctx.photoBody) as { images: { data: string }[] };
    const upload = await expectOk(api.url, account.apiKey, 'POST', `${V1}/upload`, JSON.stringify({ image: photo.images[0] }));
    const line = (i: number) => JSON.stringify({ external_id: `sku-${i}`, type: 'photo', images: [{ data: upload.upload_id }], product_name: 'Bench cup', category_id: 'home', resolution: '1K' });
    const body = Array.from({ length: s.batchItems }, (_, i) => line(i)).join('\n');

    // Idle: interactive photos one at a time, and the status poll, on the same two processes.
    const seeded = await expectOk(api.url, account.apiKey, 'POST', `${V1}/generate/photo`, ctx.photoBody);
    await eventually(() => expectOk(api.url, account.apiKey, 'GET', `${V1}/status/${seeded.action_id}`), (x) => x.status === 'completed', 60_000);
    const statusUrl = `${api.url}${V1}/status/${seeded.action_id}`;
    await warmUp({ url: statusUrl, connections: s.connections, durationSec: 1, headers });
    for (let i = 0; i < s.singleRuns; i++) recordValue(figures, 'svc.batch_photo_idle', await oneJobAlone(api.url, account, ctx.photoBody));
    recordLoad(figures, 'svc.batch_status_idle', await httpLoad({ url: statusUrl, connections: s.connections, durationSec: s.durationSec, headers }));
    await sleep(1000);
    const idleRss = rssMiB(worker.pid);

    let peakRss = idleRss;
    const sampler = setInterval(() => { peakRss = Math.max(peakRss, rssMiB(worker.pid)); }, 500);
    const t0 = performance.now();
    const { result: batch, cpu } = await measureCpu(subjectsOf([api.pid, interactive.pid, worker.pid], ctx.databaseUrl), async () => {
      const created = await fetch(`${api.url}/api/v2/batches`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/x-ndjson' }, body });
      const answer = await created.json() as { batch_id: string };
      if (created.status !== 202) throw new Error(`the batch was refused: ${created.status} ${JSON.stringify(answer).slice(0, 300)}`);
      const probes = (async () => {
        // Once a tenth is done: photos one at a time, then the status poll, while the batch drains.
        await eventually(() => doneItems(ctx, answer.batch_id), (n) => n >= s.batchItems / 10, 3_600_000, 200);
        for (let i = 0; i < s.singleRuns; i++) recordValue(figures, 'svc.batch_photo', await oneJobAlone(api.url, account, ctx.photoBody));
        recordLoad(figures, 'svc.batch_status', await httpLoad({ url: statusUrl, connections: s.connections, durationSec: s.durationSec, headers }));
      })();
      await temporal.workflow.getHandle(batchWorkflowId(answer.batch_id)).result();
      const ended = performance.now(); // the probes may outlast a small batch: not its time
      await probes;
      return { id: answer.batch_id, seconds: (ended - t0) / 1000 };
    });
    const { seconds } = batch;
    clearInterval(sampler);
    const [{ succeeded }] = await ctx.db.query(
      `SELECT count(*)::int AS succeeded FROM batch_items i JOIN jobs j ON j.id = i.job_id WHERE i.batch_id = $1 AND j.status = 'succeeded'`, [batch.id]);
    recordValue(figures, 'svc.batch', succeeded / seconds, s.batchItems - succeeded);
    recordCpu(figures, 'svc.batch', cpu, succeeded);
    recordValue(figures, 'svc.batch_rss', peakRss - idleRss);

    // Visibility follows the runs' ends a moment later: read once every run shows closed with its length.
    const runs = await eventually(async () => {
      const listed: { closed: boolean; events: number }[] = [];
      for await (const run of temporal.workflow.list({ query: `WorkflowId = '${batchWorkflowId(batch.id)}'` })) {
        listed.push({ closed: run.status.name !== 'RUNNING', events: run.historyLength });
      }
      return listed;
    }, (listed) => listed.length > 0 && listed.every((run) => run.closed && run.events > 0), 30_000, 200);
    recordValue(figures, 'svc.batch_history', Math.max(...runs.map((run) => run.events)));
  } finally {
    await connection?.close();
    await Promise.all([worker.stop(), interactive.stop()]);
    await api.stop();
  }
}

/** Items of the batch whose jobs have ended. */
async function doneItems(ctx: ServiceContext, batchId: string): Promise<number> {
  const [{ n }] = await ctx.db.query(
    `SELECT count(*)::int AS n FROM batch_items i JOIN jobs j ON j.id = i.job_id
      WHERE i.batch_id = $1 AND j.status IN ('succeeded', 'failed', 'dead_letter', 'cancelled')`, [batchId]);
  return n;
}
