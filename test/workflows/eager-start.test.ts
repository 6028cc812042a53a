import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { connectClient } from '../../src/temporal/client';
import { testEnvironment } from '../support/environment';

/**
 * `npm start`'s client shares its worker's connection and starts the workflows of its own queue eagerly (app/main.ts):
 * the server answers the start with the first workflow task, which the worker in the process takes at once.
 */
describe('eager starts on the process\'s own worker (src/temporal/client.ts)', function () {
  this.timeout(60_000);

  it('asks for an eager start on its own queue only, and the server hands that start\'s first task to the worker', async () => {
    const env = testEnvironment();
    const taskQueue = `test-eager-${randomUUID()}`;
    const connection = await NativeConnection.connect({ address: env.temporalAddress });
    // A worker of the benchmark's no-op workflow: what is measured here is where its first task went.
    const worker = await Worker.create({ connection, taskQueue, workflowsPath: require.resolve('../../bench/floor-workflows'), activities: {} });
    const client = await connectClient(env.temporalAddress, 'default', { shared: connection, eagerStartsOn: taskQueue });
    const started: string[] = [];
    try {
      await worker.runUntil(async () => {
        const start = async (queue: string) => {
          const handle = await client.workflow.start('benchNoopWorkflow', { taskQueue: queue, workflowId: `eager-probe-${randomUUID()}`, args: [] });
          started.push(handle.workflowId);
          return handle;
        };
        const eager = await start(taskQueue);
        assert.equal(eager.eagerlyStarted, true, 'a start on the worker\'s own queue is eager');
        await eager.result(); // and its worker ran it
        assert.equal((await start(`${taskQueue}-elsewhere`)).eagerlyStarted, false, 'a start on a queue this process does not serve is not');
      });
    } finally {
      await Promise.all(started.map((id) => client.workflow.getHandle(id).terminate('test over').catch(() => undefined))); // the closed one refuses
      await connection.close();
    }
  });

  it('without a shared connection, asks for nothing eager (a process with no worker: the API alone)', async () => {
    const env = testEnvironment();
    const client = await connectClient(env.temporalAddress, 'default');
    try {
      const handle = await client.workflow.start('benchNoopWorkflow', { taskQueue: `test-eager-${randomUUID()}`, workflowId: `eager-probe-${randomUUID()}`, args: [] });
      assert.equal(handle.eagerlyStarted, false);
      await handle.terminate('test over');
    } finally {
      await client.connection.close();
    }
  });
});
