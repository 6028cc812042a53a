import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { connectClient } from '../../src/temporal/client';
import { startOnce } from '../../src/temporal/starts';
import { testEnvironment } from '../support/environment';

/**
 * `npm start`'s client shares its worker's native connection and starts the workflows of its own queue eagerly
 * (app/main.ts): the server answers the start with the first workflow task, which the worker in the process takes at
 * once. (The API suite runs on such a client too: test/support/stack.ts.)
 */
describe('eager starts on the process\'s own worker (src/temporal/client.ts)', function () {
  this.timeout(60_000);
  let connection: NativeConnection;
  before(async () => {
    connection = await NativeConnection.connect({ address: testEnvironment().temporalAddress });
  });
  after(() => connection.close());

  it('asks for an eager start on its own queue only, and the worker runs that first task (it never times out to be queued again)', async () => {
    const taskQueue = `test-eager-${randomUUID()}`;
    // A worker of the benchmark's no-op workflow: what is checked here is where its first task went.
    const worker = await Worker.create({ connection, taskQueue, workflowsPath: require.resolve('../../bench/floor-workflows'), activities: {} });
    const client = await connectClient(testEnvironment().temporalAddress, 'default', { shared: connection, eagerStartsOn: taskQueue });
    const elsewhere = `${taskQueue}-elsewhere`;
    const start = (queue: string) => client.workflow.start('benchNoopWorkflow', { taskQueue: queue, workflowId: `eager-probe-${randomUUID()}`, args: [] });
    await worker.runUntil(async () => {
      const eager = await start(taskQueue);
      assert.equal(eager.eagerlyStarted, true, 'a start on the worker\'s own queue is eager');
      await eager.result();
      const events = (await eager.fetchHistory()).events!.map((e) => String(e.eventType));
      assert.ok(!events.some((type) => type.includes('WORKFLOW_TASK_TIMED_OUT')), `the first task was run as handed over: ${events.join(', ')}`);

      const ordinary = await start(elsewhere);
      assert.equal(ordinary.eagerlyStarted, false, 'a start on a queue this process does not serve is not');
      await ordinary.terminate('test over');
    });
  });

  it('a repeated start of the same id through it finds the one already there (ALREADY_EXISTS through the native core)', async () => {
    const taskQueue = `test-eager-unserved-${randomUUID()}`; // nobody runs it: the workflow stays open
    const client = await connectClient(testEnvironment().temporalAddress, 'default', { shared: connection, eagerStartsOn: taskQueue });
    const workflowId = `eager-repeat-${randomUUID()}`;
    const options = { taskQueue, workflowId, args: [{ actionId: -1 }] as [{ actionId: number }] };
    await startOnce(client, 'actionWorkflow', options);
    const first = await client.workflow.getHandle(workflowId).describe();
    await startOnce(client, 'actionWorkflow', options); // refused by the server, and that refusal taken as "there already"
    const after = await client.workflow.getHandle(workflowId).describe();
    assert.equal(after.runId, first.runId);
    assert.equal(after.status.name, 'RUNNING');
    await client.workflow.getHandle(workflowId).terminate('test over');
  });
});
