/**
 * `npm run test:faults`: faults on purpose, on both Temporal backends (the dev server on SQLite, the Temporal server
 * on Postgres), against real processes: a worker killed mid-render, one killed while it polls a Runway task (the
 * suite's server speaking Runway's wire format), the Temporal backend stopped and started again
 * mid-job, the service's Postgres stopped and started again mid-job, a worker
 * killed mid-delivery, a webhook receiver down and then up, 200 generates at once on an account that can afford 10,
 * a worker killed mid-finalisation, 50 requests with one Idempotency-Key across two API processes, an operator's
 * terminate and reset at each step of an action, a job and a delivery (settled by the reconciler), cancels
 * racing completions; a catalogue batch through a worker SIGKILL and a Temporal restart, a batch cancelled while its
 * last items run, and bad batch bodies. After each, one checker proves the invariants (test/faults/invariants.ts). The table at the
 * end says per backend and scenario how many jobs ran, how many were lost or charged twice, and how long the
 * service took to recover.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { temporal as proto } from '@temporalio/proto';
import { checkInvariants } from './invariants';
import { BackendKind, FaultStack, startFaultStack } from './harness';
import { apiClient, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { startHttpsServer } from '../support/https-server';
import { RunwayServer, startRunwayServer } from '../support/runway-server';
import { actionWorkflowId, deliveryWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { stepsOf } from '../support/history';
import { reconcile } from '../../src/actions/reconcile';
import { isThumbnailKey } from '../../src/media/thumbnails';

interface Row { backend: BackendKind; scenario: string; jobs: number; lost: number; doubleCharged: number; recoverSeconds: number | null }
const ROWS: Row[] = [];

after(() => {
  if (ROWS.length === 0) return;
  const lines = [
    '| backend | scenario | jobs | lost | double-charged | time to recover |',
    '| --- | --- | --- | --- | --- | --- |',
    ...ROWS.map((r) => `| ${r.backend === 'dev' ? 'dev server' : 'Temporal server'} | ${r.scenario} | ${r.jobs} | ${r.lost} | ${r.doubleCharged} | ${r.recoverSeconds === null ? '-' : `${r.recoverSeconds.toFixed(1)} s`} |`),
  ];
  process.stdout.write(`\n${lines.join('\n')}\n`);
});

const PRICE = 5;
const V2 = '/api/v2';
/** Items of one batch in flight in the faults' stacks. */
const BATCH_WINDOW = 4;

for (const kind of ['dev', 'server'] as const) {
  describe(`faults on ${kind === 'dev' ? 'the dev server' : 'the Temporal server on Postgres'}`, function () {
    this.timeout(300_000);
    let stack: FaultStack;
    let image: string;
    const accounts: number[] = [];

    let runway: RunwayServer;

    before(async function () {
      this.timeout(900_000); // a cold machine builds the Temporal server first
      runway = await startRunwayServer();
      stack = await startFaultStack(kind, `faults-${kind}`, {
        VIDEO_PROVIDER: 'runway', RUNWAY_API_KEY: runway.apiKey, RUNWAY_BASE_URL: runway.url, RUNWAY_POLL_INTERVAL_SECONDS: '1',
        BATCH_ITEMS_IN_FLIGHT: String(BATCH_WINDOW), // so that a batch has items waiting, running and done when a fault lands
      });
      image = await jpegBase64(400, 500);
    });
    after(async () => {
      await stack?.stop();
      await runway?.close();
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed' || !stack) return;
      // What each process last said: the evidence of a failed scenario (the logs carry no secret: the last test).
      process.stdout.write(`\n${stack.unexpectedExits.join('\n')}\n${stack.logTails()}\n`);
    });

    /** Every API key and webhook secret the scenarios made: none may appear in any process's log. */
    const secrets: string[] = [];

    async function account(sparks: number) {
      const created = await newAccount(stack.db, sparks);
      accounts.push(created.accountId);
      secrets.push(created.apiKey);
      return { ...created, call: apiClient(stack.apiUrl, created.apiKey) };
    }

    async function generate(call: ReturnType<typeof apiClient>, count: number): Promise<number[]> {
      const answers = await Promise.all(Array.from({ length: count }, () => call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })));
      return answers.map((res) => {
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.action_id as number;
      });
    }

    /** Waits for every action's workflow to end; answers how many actions did not end as `expected`. */
    async function settle(actionIds: number[], expected: string[] = ['completed']): Promise<number> {
      await Promise.all(actionIds.map((id) => stack.temporal.workflow.getHandle(actionWorkflowId(id)).result().catch(() => undefined)));
      const rows = await stack.db.query('SELECT status FROM actions WHERE id = ANY($1)', [actionIds]);
      return rows.filter((r: { status: string }) => !expected.includes(r.status)).length;
    }

    const processing = async (ids: number[]) =>
      (await stack.db.query(`SELECT count(*)::int AS n FROM actions WHERE id = ANY($1) AND status = 'processing'`, [ids]))[0].n as number;

    /** The row of the table, after the checker: no violation, nothing lost, nothing charged twice. */
    async function record(scenario: string, jobs: number, lost: number, recoveringSince: number | null): Promise<void> {
      const recoverSeconds = recoveringSince === null ? null : (Date.now() - recoveringSince) / 1000;
      const checked = await checkInvariants(stack.db, stack.temporal, stack.assetsDir, accounts);
      ROWS.push({ backend: kind, scenario, jobs, lost, doubleCharged: checked.doubleCharged, recoverSeconds });
      assert.deepEqual(stack.unexpectedExits, [], 'no service process may crash');
      assert.deepEqual(checked.violations, []);
      assert.equal(lost, 0, 'lost jobs');
      assert.equal(checked.doubleCharged, 0, 'double charges');
    }

    it('a worker killed (SIGKILL) during provider calls: a new worker finishes every job, each charged once', async () => {
      const { call } = await account(100);
      const ids = await generate(call, 6);
      await eventually(() => processing(ids), (n) => n > 0, 60_000);
      const t0 = Date.now();
      await stack.replaceWorker();
      await record('worker SIGKILL mid-render', ids.length, await settle(ids), t0);
    });

    it('a worker killed (SIGKILL) while it polls a Runway task: a new worker checks the same task, one submit, charged once', async () => {
      const { call } = await account(100);
      runway.nextTask(...Array.from({ length: 8 }, () => ({ status: 'RUNNING' as const, progress: 0.5 })), { status: 'SUCCEEDED' });
      const tasksBefore = runway.tasks.length;
      const created = await call('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 5 });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      await eventually(async () => runway.tasks.slice(tasksBefore).find((t) => t.polls > 0), Boolean, 60_000);
      const t0 = Date.now();
      await stack.replaceWorker();
      const lost = await settle([created.body.action_id]);
      assert.equal(runway.tasks.length - tasksBefore, 1, 'one submit to Runway');
      await record('worker SIGKILL mid-Runway-poll', 1, lost, t0);
    });

    it('the Temporal backend stopped mid-job: 503 generation_unavailable with nothing held while down; jobs resume and complete after', async () => {
      const { call } = await account(100);
      const ids = await generate(call, 4);
      await eventually(() => processing(ids), (n) => n > 0, 60_000);
      await stack.backend.stop();
      let refused;
      try {
        refused = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] });
      } finally {
        await stack.backend.start();
      }
      const t0 = Date.now();
      assert.deepEqual([refused.status, refused.body.detail?.error], [503, 'generation_unavailable'], JSON.stringify(refused.body));
      // The renders in flight go on meanwhile (and may charge); the refused request's own action holds nothing.
      const [attempt] = await stack.db.query(
        `SELECT a.status, h.status AS hold FROM actions a LEFT JOIN spark_holds h ON h.action_id = a.id WHERE a.account_id = $1 AND a.id <> ALL($2)`,
        [accounts.at(-1), ids]);
      assert.ok(!attempt || (attempt.status === 'failed' && attempt.hold === 'released'), JSON.stringify(attempt));
      const lost = await settle(ids);
      const again = await eventually(() => call('POST', `${V1}/generate/photo`, { images: [{ data: image }] }), (res) => res.status === 200, 60_000, 500);
      const all = [...ids, again.body.action_id as number];
      await record('Temporal backend stopped and started mid-job', all.length, lost + await settle([again.body.action_id]), t0);
    });

    it('Postgres stopped mid-job: 503 generation_unavailable within seconds while it is down, never a 500; every job completes after', async () => {
      const { call } = await account(100);
      const ids = await generate(call, 4);
      await eventually(() => processing(ids), (n) => n > 0, 60_000);
      stack.postgres.stop();
      let answers;
      let took: number;
      try {
        const t = Date.now();
        answers = await Promise.all([
          call('POST', `${V1}/generate/photo`, { images: [{ data: image }] }), call('GET', `${V1}/status/${ids[0]}`), call('GET', `${V1}/balance`),
        ]);
        took = Date.now() - t;
      } finally {
        stack.postgres.start();
      }
      for (const res of answers) assert.deepEqual([res.status, res.body.detail?.error], [503, 'generation_unavailable'], JSON.stringify(res.body));
      assert.ok(took < 10_000, `answered in ${took} ms`);
      const t0 = Date.now();
      const lost = await settle(ids);
      const again = await eventually(() => call('POST', `${V1}/generate/photo`, { images: [{ data: image }] }), (res) => res.status === 200, 60_000, 500);
      await record('Postgres stopped and started mid-job', ids.length + 1, lost + await settle([again.body.action_id]), t0);
    });

    it('a webhook receiver down for a while, then up: every delivery arrives once it is up, none beyond the attempt limit', async () => {
      let up = false;
      const received = new Set<string>();
      const receiver = await startHttpsServer((req, res) => {
        if (!up) return void res.writeHead(503).end();
        received.add(String(req.headers['x-service-job-id']));
        res.writeHead(204).end();
      });
      try {
        const { call } = await account(100);
        const hook = await call('POST', `${V1}/webhooks`, { url: `${receiver.url}/hook`, events: ['generation.completed'] });
        assert.equal(hook.status, 201, JSON.stringify(hook.body));
        secrets.push(hook.body.secret);
        const ids = await generate(call, 3);
        const lost = await settle(ids);
        const deliveries = () => stack.db.query('SELECT status, attempts, max_attempts FROM webhook_deliveries WHERE action_id = ANY($1)', [ids]);
        await eventually(deliveries, (rows) => rows.length === ids.length && rows.every((d: { attempts: number }) => d.attempts >= 2), 60_000, 100);
        const t0 = Date.now();
        up = true;
        const done = await eventually(deliveries, (rows) => rows.every((d: { status: string }) => d.status === 'succeeded'), 60_000, 100);
        assert.equal(received.size, ids.length, 'one delivery per job');
        assert.ok(done.every((d: { attempts: number; max_attempts: number }) => d.attempts <= d.max_attempts));
        await record('webhook receiver down, then up', ids.length, lost, t0);
      } finally {
        await receiver.close();
      }
    });

    it('a worker killed (SIGKILL) during a webhook delivery: a new worker delivers it, within the attempt limit', async () => {
      let hang = true;
      const receiver = await startHttpsServer((_req, res) => {
        if (!hang) res.writeHead(204).end(); // while hanging, the delivery waits on an answer that never comes
      });
      try {
        const { call } = await account(100);
        const hook = await call('POST', `${V1}/webhooks`, { url: `${receiver.url}/hook`, events: ['generation.completed'] });
        assert.equal(hook.status, 201, JSON.stringify(hook.body));
        secrets.push(hook.body.secret);
        const ids = await generate(call, 2);
        const lost = await settle(ids);
        await eventually(async () => receiver.requests.length, (n) => n > 0, 60_000);
        const t0 = Date.now();
        hang = false;
        await stack.replaceWorker();
        const deliveries = () => stack.db.query('SELECT status, attempts, max_attempts FROM webhook_deliveries WHERE action_id = ANY($1)', [ids]);
        const done = await eventually(deliveries, (rows) => rows.length === ids.length && rows.every((d: { status: string }) => d.status === 'succeeded'), 120_000, 200);
        assert.ok(done.every((d: { attempts: number; max_attempts: number }) => d.attempts <= d.max_attempts), JSON.stringify(done));
        await record('worker SIGKILL mid-delivery', ids.length, lost, t0);
      } finally {
        await receiver.close();
      }
    });

    it('200 generates at once on an account that can afford 10: exactly 10 accepted, the rest 402, nothing else held', async () => {
      const { call } = await account(10 * PRICE);
      const answers = await Promise.all(Array.from({ length: 200 }, () => call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })));
      const statuses = answers.map((res) => res.status);
      assert.deepEqual([statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 402).length], [10, 190], JSON.stringify([...new Set(statuses)]));
      const ids = answers.filter((res) => res.status === 200).map((res) => res.body.action_id as number);
      await record('200 concurrent generates, 10 affordable', 200, await settle(ids), null);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 0, available: 0, holds: 0 });
    });

    /** The results stored for the action (not their thumbnails): one per render. */
    const storedResults = async (actionId: number) => (await readdir(path.join(stack.assetsDir, 'results', String(actionId))).catch(() => [] as string[]))
      .filter((name) => !isThumbnailKey(name));

    it('a worker killed (SIGKILL) while it finalises (the charge in flight): a new worker completes every job, charged once, one result each', async () => {
      const { call, accountId } = await account(100);
      const ids = await generate(call, 2);
      const job = await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }] });
      assert.equal(job.status, 202, JSON.stringify(job.body));
      // The account's row, held by the test: every charge of these jobs (their completeAction, a local activity of
      // the workflow's worker after the provider call) waits on it, so the worker dies in the middle of finalising
      // all three.
      const lock = stack.db.createQueryRunner();
      await lock.connect();
      await lock.startTransaction();
      let t0 = 0;
      try {
        await lock.query('SET LOCAL idle_in_transaction_session_timeout = 0'); // this test's own idle transaction, on slow machines too
        await lock.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
        const waiting = async () => (await stack.db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`))[0].n as number;
        await eventually(waiting, (n) => n === 3, 60_000);
        // Each image is rendered and stored by now. Its render is a local activity of the workflow task that dies
        // with the worker (not yet recorded: the task has not completed): the new worker renders it again under the
        // name the workflow chose, over the lost one's.
        assert.deepEqual(await Promise.all(ids.map(async (id) => (await storedResults(id)).length)), ids.map(() => 1));
        const recorded = async (id: number) => stepsOf((await stack.temporal.workflow.getHandle(actionWorkflowId(id)).fetchHistory()).events!)
          .some((step) => step.type === 'generateAsset');
        assert.deepEqual(await Promise.all(ids.map(recorded)), ids.map(() => false), 'the renders are in the task the kill loses');
        t0 = Date.now();
        await stack.replaceWorker(() => lock.rollbackTransaction());
      } finally {
        if (lock.isTransactionActive) await lock.rollbackTransaction();
        await lock.release();
      }
      await stack.temporal.workflow.getHandle(jobWorkflowId(job.body.job_id)).result();
      const all = [...ids, job.body.resource_id as number];
      const lost = await settle(all);
      for (const id of all) assert.equal((await storedResults(id)).length, 1, `action ${id}: one stored result, none left over by the lost render`);
      await record('worker SIGKILL mid-finalisation', all.length, lost, t0);
    });

    it('50 concurrent requests with one Idempotency-Key across two API processes: one action, one hold, identical answers', async () => {
      const { apiKey, accountId } = await account(100);
      const calls = stack.apiUrls.map((url) => apiClient(url, apiKey));
      const headers = { 'Idempotency-Key': `faults-${kind}-${randomUUID()}` };
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => calls[i % calls.length]('POST', `${V1}/generate/photo`, { images: [{ data: image }] }, headers)));
      assert.deepEqual([...new Set(answers.map((res) => res.status))], [200], JSON.stringify(answers.find((res) => res.status !== 200)?.body));
      for (const res of answers) assert.deepEqual(res.body, answers[0].body);
      const actions = await stack.db.query('SELECT id FROM actions WHERE account_id = $1', [accountId]);
      const [{ n: holds }] = await stack.db.query('SELECT count(*)::int AS n FROM spark_holds h JOIN actions a ON a.id = h.action_id WHERE a.account_id = $1', [accountId]);
      assert.deepEqual([actions.length, holds], [1, 1]);
      await record('50 requests, one Idempotency-Key, two APIs', 1, await settle([answers[0].body.action_id]), null);
    });

    it('an operator terminates or resets workflows at each step: the reconciler settles every one, charged once, announced once', async () => {
      const received: string[] = [];
      const receiver = await startHttpsServer((req, res) => {
        if (req.url?.startsWith('/hang')) return; // a receiver that never answers: the delivery waits on it
        received.push(req.url!);
        res.writeHead(204).end();
      });
      const operator = 'operator pressed a button in the Web UI';
      const terminate = (workflowId: string) => stack.temporal.workflow.getHandle(workflowId).terminate(operator);
      const resetToFirstTask = async (workflowId: string) => {
        const handle = stack.temporal.workflow.getHandle(workflowId);
        const { runId } = await handle.describe();
        const { events } = await handle.fetchHistory();
        // The first task's end; a workflow still in its first task (an in-process photo renders within it) is reset
        // to that task's start, which Temporal accepts as well.
        const { EVENT_TYPE_WORKFLOW_TASK_COMPLETED: completed, EVENT_TYPE_WORKFLOW_TASK_STARTED: started } = proto.api.enums.v1.EventType;
        const first = events!.find((e) => e.eventType === completed) ?? events!.find((e) => e.eventType === started)!;
        await stack.temporal.workflowService.resetWorkflowExecution({
          namespace: 'default', workflowExecution: { workflowId, runId }, workflowTaskFinishEventId: first.eventId, reason: operator, requestId: randomUUID(),
        });
      };
      try {
        const { call } = await account(100);
        const photo = async (hook: string) => {
          const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], webhook_url: `${receiver.url}/${hook}` });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return res.body.action_id as number;
        };
        const step: Record<string, number> = {};
        // Pending: no worker runs, the workflow waits for its first task.
        await stack.workers.shift()!.kill('SIGKILL');
        step.terminatedPending = await photo('terminated-pending');
        await terminate(actionWorkflowId(step.terminatedPending));
        await stack.startWorker();
        // Mid-render (each acted on once it is processing).
        const rendering = async (id: number) => eventually(() => processing([id]), (n) => n === 1, 60_000);
        step.terminatedRendering = await photo('terminated-rendering');
        await rendering(step.terminatedRendering);
        await terminate(actionWorkflowId(step.terminatedRendering));
        step.resetRendering = await photo('reset-rendering');
        await rendering(step.resetRendering);
        await resetToFirstTask(actionWorkflowId(step.resetRendering));
        for (const [name, act] of [['job-terminated', terminate], ['job-reset', resetToFirstTask]] as const) {
          const job = await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }], webhook_url: `${receiver.url}/${name}` });
          assert.equal(job.status, 202, JSON.stringify(job.body));
          step[name] = job.body.resource_id;
          await rendering(job.body.resource_id);
          await act(jobWorkflowId(job.body.job_id));
        }
        // Completed and announced, then reset to its first task: it runs again.
        step.resetCompleted = await photo('reset-completed');
        await settle([step.resetCompleted]);
        await eventually(async () => received.filter((u) => u === '/reset-completed').length, (n) => n === 1, 60_000);
        await resetToFirstTask(actionWorkflowId(step.resetCompleted));
        // Completed, its delivery waiting on a receiver that never answers: the delivery's workflow is terminated.
        step.terminatedDelivery = await photo('hang');
        await settle([step.terminatedDelivery]);
        const [delivery] = await eventually(() => stack.db.query('SELECT id FROM webhook_deliveries WHERE action_id = $1', [step.terminatedDelivery]), (r) => r.length === 1, 60_000);
        await eventually(async () => receiver.requests.filter((r) => r.path === '/hang').length, (n) => n > 0, 60_000);
        await terminate(deliveryWorkflowId(delivery.id));

        const t0 = Date.now();
        const ids = Object.values(step);
        const deliveries = () => stack.db.query(
          `SELECT a.id, a.status, d.event, d.status AS delivery FROM actions a LEFT JOIN webhook_deliveries d ON d.action_id = a.id WHERE a.id = ANY($1) ORDER BY a.id`, [ids]);
        const settled = await eventually(async () => {
          await reconcile(stack.db, stack.temporal, { taskQueue: `faults-${kind}`, graceSeconds: 0, webhookRetryInitialMs: 500 });
          return deliveries();
        }, (rows) => rows.length === ids.length && rows.every((r: { status: string; delivery: string | null }) => !['pending', 'processing'].includes(r.status) && r.delivery !== null && r.delivery !== 'pending'), 120_000, 1000);
        // Each action ends once, with one delivery of its ending's event: sent, except the one the operator stopped.
        for (const row of settled) {
          assert.equal(row.event, row.status === 'completed' ? 'generation.completed' : 'generation.failed', JSON.stringify(row));
          assert.equal(row.delivery, row.id === step.terminatedDelivery ? 'failed' : 'succeeded', JSON.stringify(row));
        }
        const sent = received.reduce<Record<string, number>>((n, u) => ({ ...n, [u]: (n[u] ?? 0) + 1 }), {});
        assert.ok(Object.values(sent).every((n) => n === 1), `each event sent once: ${JSON.stringify(sent)}`);
        await record('operator terminates and resets at each step', ids.length, 0, t0);
      } finally {
        await receiver.close();
      }
    });

    it('cancels racing completions: each action ends charged or released, never both', async () => {
      const { call } = await account(100);
      const ids = await generate(call, 8);
      await Promise.all(ids.map(async (id, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 300)); // from before the render to after it
        const res = await call('POST', `${V1}/cancel/${id}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      }));
      await record('cancel racing completion', ids.length, await settle(ids, ['completed', 'cancelled']), null);
    });

    /** A batch of `count` photos; answers its id. */
    async function batchOf(call: ReturnType<typeof apiClient>, count: number): Promise<string> {
      const created = await call('POST', `${V2}/batches`, {
        items: Array.from({ length: count }, (_, i) => ({ external_id: `sku-${i}`, type: 'photo', images: [{ data: image }] })),
      });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      return created.body.batch_id as string;
    }

    /** The batch once it has ended (read from Postgres: the Temporal backend may be restarting meanwhile). */
    async function batchEnded(call: ReturnType<typeof apiClient>, batchId: string) {
      return (await eventually(() => call('GET', `${V2}/batches/${batchId}`), (res) => res.status === 200 && res.body.check_again_in_sec === null, 240_000, 500)).body;
    }

    /** The manifest's items, each checked: one job, and a fresh result URL for a success. */
    async function manifest(call: ReturnType<typeof apiClient>, batchId: string): Promise<{ status: string; job_id: string | null; result_url: string | null }[]> {
      const res = await call('GET', `${V2}/batches/${batchId}/results.jsonl`);
      assert.equal(res.status, 200);
      const lines = String(res.body).trim().split('\n').map((line) => JSON.parse(line));
      for (const item of lines) if (item.status === 'succeeded') assert.ok(item.job_id && item.result_url, JSON.stringify(item));
      return lines;
    }

    it('a batch through a worker killed (SIGKILL) and the Temporal backend restarted: every item ends once, charged once, the manifest whole', async () => {
      const { call, accountId } = await account(1_000);
      const batchId = await batchOf(call, 16);
      const done = async () => (await call('GET', `${V2}/batches/${batchId}`)).body.counts as Record<string, number>;
      await eventually(done, (counts) => counts.succeeded > 0 && counts.running > 0 && counts.pending > 0, 60_000, 100);
      const t0 = Date.now();
      await stack.replaceWorker(async () => {
        await stack.backend.stop();
        await stack.backend.start();
      });
      const ended = await batchEnded(call, batchId);
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      const items = await manifest(call, batchId);
      assert.equal(items.length, 16);
      const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
      assert.equal(n, 16, 'one action per item');
      assert.equal(ended.charged, 16 * PRICE);
      await record('batch: worker SIGKILL and Temporal restart', 16, items.filter((i) => i.status !== 'succeeded').length, t0);
    });

    it('a batch cancelled while its last items run: each item charged or released, never both', async () => {
      const { call } = await account(1_000);
      const batchId = await batchOf(call, 10);
      await eventually(async () => (await call('GET', `${V2}/batches/${batchId}`)).body.counts, (counts) => counts.succeeded >= 6 && counts.running > 0, 120_000, 50);
      const cancel = await call('POST', `${V2}/batches/${batchId}/cancel`);
      assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
      const ended = await batchEnded(call, batchId);
      assert.equal(ended.status, 'cancelled');
      const items = await manifest(call, batchId);
      assert.ok(items.every((i) => ['succeeded', 'cancelled'].includes(i.status)), JSON.stringify(items.map((i) => i.status)));
      assert.equal(ended.charged, PRICE * items.filter((i) => i.status === 'succeeded').length);
      await record('batch cancelled racing its last items', items.length, 0, null);
    });

    it('bad batches (broken NDJSON, a line over its limit, 10,001 lines, repeated external_ids, another account\'s upload): 4xx with where, nothing held, the API answering', async () => {
      const { call, accountId } = await account(100);
      const other = await account(100);
      const upload = await other.call('POST', `${V1}/upload`, { image: { data: image } });
      assert.equal(upload.status, 201);
      const line = (id: string, extra: object = {}) => JSON.stringify({ external_id: id, type: 'photo', images: [{ data: image }], ...extra });
      const ndjson = (text: string) => call('POST', `${V2}/batches`, text, { 'Content-Type': 'application/x-ndjson' });
      const answers = [
        [await ndjson([line('a'), '{"external_id": "b"', line('c')].join('\n')), 422, 'body.2'],
        [await ndjson([line('a'), JSON.stringify({ external_id: 'e', type: 'edit', action_id: 1, instruction: 'x'.repeat(200_000) })].join('\n')), 422, 'line 2'],
        [await ndjson(Array.from({ length: 10_001 }, (_, i) => line(`s${i}`, { images: [{ url: 'https://example.com/a.jpg' }] })).join('\n')), 422, 'lines'],
        [await ndjson([line('a'), line('a')].join('\n')), 422, 'line 2'],
        [await ndjson(line('theirs', { images: [{ data: upload.body.upload_id }] })), 422, 'upload_not_found'],
      ] as const;
      for (const [res, status, where] of answers) {
        assert.equal(res.status, status, JSON.stringify(res.body).slice(0, 500));
        const text = JSON.stringify(res.body);
        assert.ok(where === 'body.2' ? res.body.detail.some((i: { loc: unknown[] }) => i.loc[1] === 2)
          : where === 'line 2' ? res.body.detail.details.items.some((i: { line: number }) => i.line === 2)
            : text.includes(where), `${where}: ${text.slice(0, 500)}`);
      }
      const t0 = Date.now();
      assert.equal((await call('GET', `${V1}/balance`)).status, 200, 'still answering');
      assert.ok(Date.now() - t0 < 2_000);
      const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM batches WHERE account_id = $1', [accountId]);
      assert.equal(n, 0, 'no batch written');
      const [money] = await stack.db.query('SELECT balance, held FROM accounts WHERE id = $1', [accountId]);
      assert.deepEqual([money.balance, money.held], [100, 0], 'nothing held');
      await record('bad batch bodies', 0, 0, null);
    });

    it('no API key or webhook secret of the scenarios, nor a wrong key sent to the API, appears in any process\'s log', async () => {
      const wrongKey = `sk_live_${randomUUID().replace(/-/g, '')}`;
      for (const url of stack.apiUrls) assert.equal((await apiClient(url, wrongKey)('GET', `${V1}/balance`)).status, 401);
      const logs = await Promise.all((await readdir(stack.logsDir)).map((f) => readFile(path.join(stack.logsDir, f), 'utf8')));
      assert.ok(secrets.length > accounts.length, 'webhook secrets were made too');
      assert.ok(logs.join('').length > 0);
      for (const secret of [...secrets, wrongKey]) assert.ok(!logs.some((text) => text.includes(secret)), `a secret (${secret.slice(0, 8)}...) is in a log`);
    });
  });
}
