/**
 * The service process stops mid-job, cleanly or by crash; started again, it finishes the job and charges once.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { actionWorkflowId } from '../../src/temporal/contract';
import { freePort } from '../../ops/dev-server';
import { testEnvironment } from '../support/environment';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { stepsOf } from '../support/history';
import { startServiceProcess } from '../../ops/cluster/service-process';
import type { Client } from '@temporalio/client';
import { connectClient } from '../../src/temporal/client';
import { openDatabase } from '../../src/db/data-source';
import { isThumbnailKey } from '../../src/media/thumbnails';
import type { DataSource } from 'typeorm';

describe('stopping the service mid-job', function () {
  this.timeout(90_000);
  let db: DataSource;
  let temporal: Client;
  let image: string;
  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false });
    temporal = await connectClient(testEnvironment().temporalAddress, 'default');
    image = await jpegBase64();
  });
  after(async () => {
    await temporal.connection.close();
    await db.destroy();
  });

  const signingSecret = randomBytes(32).toString('hex');
  async function serviceEnv(renderDelayMs: number) {
    const port = await freePort();
    return {
      env: {
        PORT: String(port),
        DATABASE_URL: testEnvironment().databaseUrl,
        TEMPORAL_ADDRESS: testEnvironment().temporalAddress,
        TEMPORAL_TASK_QUEUE: taskQueue,
        DATA_DIR: dataDir,
        ASSET_SIGNING_SECRET: signingSecret,
        LOCAL_RENDERER_DELAY_MS: String(renderDelayMs),
      },
      baseUrl: `http://127.0.0.1:${port}`,
    };
  }
  let taskQueue: string;
  let dataDir: string;
  beforeEach(() => {
    taskQueue = `restart-${randomUUID()}`;
    dataDir = path.join(os.tmpdir(), `imagery-restart-${randomUUID()}`);
  });

  /**
   * Waits until the action's render is under way: its first step has made it processing, and the render (a local
   * activity of the same workflow task, in the worker's own process) follows at once, taking the renderer's delay.
   */
  async function renderRunning(actionId: number): Promise<void> {
    await eventually(async () => (await db.query('SELECT status FROM actions WHERE id = $1', [actionId]))[0].status, (status) => status === 'processing');
  }

  async function recordedRenders(actionId: number): Promise<number[]> {
    const history = await temporal.workflow.getHandle(actionWorkflowId(actionId)).fetchHistory();
    return stepsOf(history.events!).filter((step) => step.type === 'generateAsset').map((step) => step.attempt);
  }

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`${signal}: the job ends completed and charged once (${signal === 'SIGTERM' ? 'the draining service finishes it' : 'the restarted service renders it again'})`, async () => {
      const { accountId, apiKey } = await newAccount(db, 20);
      const first = await serviceEnv(2_000);
      const service = await startServiceProcess('all', first.env);
      const created = await apiClient(first.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: image }] });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const actionId = created.body.action_id;
      await renderRunning(actionId);

      const code = await service.kill(signal);
      if (signal === 'SIGTERM') assert.equal(code, 0, 'a clean shutdown drains and exits 0');
      const [mid] = await db.query('SELECT status FROM actions WHERE id = $1', [actionId]);
      // A clean shutdown lets the workflow task in flight finish (the render is a local activity of it): rendered,
      // charged and completed before the exit. A crash loses the task: the action waits, processing, for the restart.
      assert.equal(mid.status, signal === 'SIGTERM' ? 'completed' : 'processing');

      const second = await serviceEnv(0);
      const restarted = await startServiceProcess('all', second.env);
      try {
        await temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
        const status = await apiClient(second.baseUrl, apiKey)('GET', `${V1}/status/${actionId}`);
        assert.equal(status.body.status, 'completed');
        assert.equal((await fetch(status.body.result_url)).status, 200);
        assert.deepEqual((await apiClient(second.baseUrl, apiKey)('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
        await assertMoneyConsistent(db, accountId);
        const ledger = await db.query(`SELECT count(*)::int AS n FROM spark_ledger WHERE action_id = $1`, [actionId]);
        assert.equal(ledger[0].n, 1, 'one charge');
      } finally {
        assert.equal(await restarted.kill('SIGTERM'), 0);
      }
      // SIGKILL: the crashed task's render was lost with it; the task timed out and ran again on the restarted worker,
      // which stored its render over the lost one's (the name is the workflow's).
      assert.deepEqual(await recordedRenders(actionId), [1], 'one render in the history');
      assert.equal((await readdir(path.join(dataDir, 'assets', 'results', String(actionId)))).filter((f) => !isThumbnailKey(f)).length, 1, 'one stored result');
    });
  }
});
