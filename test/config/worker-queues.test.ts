import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { startServiceProcess } from '../../ops/cluster/service-process';
import { workerQueues } from '../../app/worker';
import { testEnvironment } from '../support/environment';
import { eventually } from '../support/fixtures';

describe('WORKER_QUEUES', () => {
  it('serves everything when unset, and exactly what it names otherwise', () => {
    assert.deepEqual(workerQueues(undefined, ['gemini', 'runway']), { main: true, batch: true, providers: ['gemini', 'runway'] });
    assert.deepEqual(workerQueues(undefined, ['local', 'local']), { main: true, batch: true, providers: ['local'] });
    assert.deepEqual(workerQueues(['main'], ['gemini', 'runway']), { main: true, batch: false, providers: [] });
    assert.deepEqual(workerQueues(['runway'], ['gemini', 'runway']), { main: false, batch: false, providers: ['runway'] });
    assert.deepEqual(workerQueues(['gemini', 'main'], ['gemini', 'runway']), { main: true, batch: false, providers: ['gemini'] });
    assert.deepEqual(workerQueues(['batch'], ['gemini']), { main: false, batch: true, providers: [] });
  });

  it('refuses a queue of a provider that is not configured, and an empty choice', () => {
    assert.throws(() => workerQueues(['runway'], ['local']), /WORKER_QUEUES may name main, batch, local; got "runway"/);
    assert.throws(() => workerQueues([], ['local']), /WORKER_QUEUES/);
  });

  it('refuses to leave out the main queue in a process that also takes requests (npm start)', () => {
    assert.throws(() => workerQueues(['local'], ['local'], { requireMain: true }), /must include "main"/);
    assert.deepEqual(workerQueues(['main'], ['local'], { requireMain: true }), { main: true, batch: false, providers: [] });
  });
});

describe('a worker process with WORKER_QUEUES', function () {
  this.timeout(60_000);

  it('polls only the queues it names', async () => {
    const { Connection } = await import('@temporalio/client');
    const { temporal } = await import('@temporalio/proto');
    const env = testEnvironment();
    const taskQueue = `queues-${process.pid}-${Date.now()}`;
    const worker = await startServiceProcess('worker', {
      DATABASE_URL: env.databaseUrl, TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_TASK_QUEUE: taskQueue,
      WORKER_QUEUES: 'local', ASSETS_DIR: path.join(os.tmpdir(), 'imagery-test-assets'), DATA_DIR: path.join(os.tmpdir(), `imagery-queues-${process.pid}`),
    });
    const connection = await Connection.connect({ address: env.temporalAddress });
    try {
      const pollers = async (name: string, type: 'WORKFLOW' | 'ACTIVITY') => (await connection.workflowService.describeTaskQueue({
        namespace: 'default', taskQueue: { name }, taskQueueType: temporal.api.enums.v1.TaskQueueType[`TASK_QUEUE_TYPE_${type}`],
      })).pollers ?? [];
      await eventually(() => pollers(`${taskQueue}-provider-local`, 'ACTIVITY'), (p) => p.length === 1);
      assert.deepEqual(await pollers(taskQueue, 'WORKFLOW'), [], 'nothing polls the main queue');
      assert.deepEqual(await pollers(taskQueue, 'ACTIVITY'), []);
      assert.deepEqual(await pollers(`${taskQueue}-batch`, 'WORKFLOW'), [], 'nothing polls the batch queue');
    } finally {
      await connection.close();
      await worker.kill('SIGTERM');
    }
  });

  it('npm start (API and worker in one process) refuses a choice without main', async () => {
    await assert.rejects(startServiceProcess('all', { WORKER_QUEUES: 'local' }), /must include \\"main\\"|must include "main"/);
  });
});
