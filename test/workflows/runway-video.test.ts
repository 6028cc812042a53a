/**
 * Videos with Runway through the whole service: the API, the action workflow advancing the task on durable timers,
 * the adapter against the suite's Runway wire-format server, and the money. A task is submitted once, even across a
 * worker crash; a cancel reaches Runway; a failed task releases the hold, or is submitted again when Runway's
 * failure is transient.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { allFrom, Providers } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { OutboundPolicy } from '../../src/net/outbound';
import { RunwayProvider } from '../../src/providers/runway';
import { actionWorkflowId } from '../../src/temporal/contract';
import { freePort } from '../../ops/dev-server';
import { testEnvironment } from '../support/environment';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { RunwayServer, sampleMp4, startRunwayServer } from '../support/runway-server';
import { startServiceProcess } from '../../ops/cluster/service-process';
import { Stack, startStack } from '../support/stack';

const POLL_SECONDS = 0.2;

describe('videos with Runway, end to end', function () {
  this.timeout(120_000);
  let runway: RunwayServer;
  let stack: Stack;
  let image: string;
  before(async () => {
    runway = await startRunwayServer();
    const video = new RunwayProvider({
      apiKey: runway.apiKey, baseUrl: runway.url, model: 'gen4_turbo', pollIntervalSeconds: POLL_SECONDS, timeoutMs: 10_000,
      outbound: new OutboundPolicy(loadConfig().outboundAllowCidrs),
    });
    const providers: Providers = { ...allFrom(new LocalRenderer()), video };
    stack = await startStack({ providers });
    image = await jpegBase64(640, 480, '#8040c0');
  });
  after(async () => {
    await stack.stop();
    await runway.close();
  });

  const submits = () => runway.requests.filter((r) => r.method === 'POST' && r.path === '/v1/image_to_video');
  const status = (call: ReturnType<typeof apiClient>, actionId: number) => call('GET', `${V1}/status/${actionId}`);

  async function newVideo(sparks = 50) {
    const { accountId, apiKey } = await newAccount(stack.db, sparks);
    const call = apiClient(stack.baseUrl, apiKey);
    const before = submits().length;
    const res = await call('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 5, scenario: 'A slow turn' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return { accountId, call, actionId: res.body.action_id as number, submitsBefore: before };
  }

  it('submits once, checks the task on timers, stores Runway\'s MP4 and charges once', async () => {
    runway.nextTask({ status: 'PENDING' }, { status: 'THROTTLED' }, { status: 'RUNNING', progress: 0.3 }, { status: 'RUNNING', progress: 0.8 }, { status: 'SUCCEEDED' });
    const { accountId, call, actionId, submitsBefore } = await newVideo();
    assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result()).status, 'completed');
    assert.equal(submits().length - submitsBefore, 1, 'one task submitted');
    const task = runway.tasks.at(-1)!;
    assert.ok(task.polls >= 5, `checked until it succeeded (${task.polls} checks)`);
    const done = await status(call, actionId);
    assert.equal(done.body.status, 'completed');
    assert.deepEqual(Buffer.from(await (await fetch(done.body.result_url)).arrayBuffer()), await sampleMp4(), 'the stored video is Runway\'s output');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 40, available: 40, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
    const [{ provider, provider_task_id }] = await stack.db.query('SELECT provider, provider_task_id FROM actions WHERE id = $1', [actionId]);
    assert.deepEqual([provider, provider_task_id], ['runway', task.id]);
  });

  it('a safety refusal fails the action with Runway\'s reason and releases the hold', async () => {
    runway.nextTask({ status: 'RUNNING', progress: 0.1 }, { status: 'FAILED', failureCode: 'SAFETY.INPUT.IMAGE', failure: 'The input image was flagged' });
    const { accountId, call, actionId, submitsBefore } = await newVideo();
    assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result()).status, 'failed');
    const failed = await status(call, actionId);
    assert.match(failed.body.error_message, /SAFETY\.INPUT\.IMAGE/);
    assert.equal(submits().length - submitsBefore, 1, 'a refusal is not submitted again');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a transient task failure submits a new task, which completes; charged once', async () => {
    runway.nextTask({ status: 'FAILED', failureCode: 'INTERNAL.BAD_OUTPUT.CODE01', failure: 'Bad output' });
    runway.nextTask({ status: 'RUNNING', progress: 0.5 }, { status: 'SUCCEEDED' });
    const { accountId, call, actionId, submitsBefore } = await newVideo();
    assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result()).status, 'completed');
    assert.equal(submits().length - submitsBefore, 2);
    assert.equal((await call('GET', `${V1}/balance`)).body.balance, 40);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a cancel while Runway renders stops the task at Runway and releases the hold', async () => {
    runway.nextTask({ status: 'RUNNING', progress: 0.2 });
    const { accountId, call, actionId } = await newVideo();
    await eventually(async () => (await stack.db.query('SELECT provider_task_id FROM actions WHERE id = $1', [actionId]))[0].provider_task_id, Boolean);
    const [{ provider_task_id: taskId }] = await stack.db.query('SELECT provider_task_id FROM actions WHERE id = $1', [actionId]);
    const res = await call('POST', `${V1}/cancel/${actionId}`);
    assert.deepEqual([res.status, res.body.cancelled], [200, false]);
    assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result()).status, 'cancelled');
    assert.ok(runway.requests.some((r) => r.method === 'DELETE' && r.path === `/v1/tasks/${taskId}`), 'the task was cancelled at Runway');
    assert.equal((await status(call, actionId)).body.status, 'cancelled');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a service killed mid-render resumes checking the same task after restart: one submit, charged once', async () => {
    const env = testEnvironment();
    const taskQueue = `runway-restart-${randomUUID()}`;
    const dataDir = path.join(os.tmpdir(), `imagery-runway-${randomUUID()}`);
    const serviceEnv = async () => {
      const port = await freePort();
      return {
        baseUrl: `http://127.0.0.1:${port}`,
        env: {
          PORT: String(port), DATABASE_URL: env.databaseUrl, TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_TASK_QUEUE: taskQueue,
          DATA_DIR: dataDir, ASSET_SIGNING_SECRET: randomBytes(32).toString('hex'), VIDEO_PROVIDER: 'runway',
          RUNWAY_API_KEY: runway.apiKey, RUNWAY_BASE_URL: runway.url, RUNWAY_POLL_INTERVAL_SECONDS: String(POLL_SECONDS),
        },
      };
    };
    // Long enough to outlive the first process, then done.
    runway.nextTask(...Array.from({ length: 10 }, () => ({ status: 'RUNNING' as const, progress: 0.5 })), { status: 'SUCCEEDED' });
    const { accountId, apiKey } = await newAccount(stack.db, 50);
    const first = await serviceEnv();
    const service = await startServiceProcess('all', first.env);
    const before = submits().length;
    const tasksBefore = runway.tasks.length;
    const created = await apiClient(first.baseUrl, apiKey)('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 10 });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const task = await eventually(async () => runway.tasks.slice(tasksBefore).find((t) => t.polls > 0), Boolean);
    await service.kill('SIGKILL');

    const second = await serviceEnv();
    const restarted = await startServiceProcess('all', second.env);
    try {
      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(created.body.action_id)).result()).status, 'completed');
      assert.equal(submits().length - before, 1, 'the restarted worker checked the same task');
      assert.ok(task!.polls > 10, 'checked by both processes until it succeeded');
      assert.equal((await apiClient(second.baseUrl, apiKey)('GET', `${V1}/balance`)).body.balance, 32, 'a 10 s video, charged once');
      await assertMoneyConsistent(stack.db, accountId);
    } finally {
      await restarted.kill('SIGTERM');
    }
  });
});
