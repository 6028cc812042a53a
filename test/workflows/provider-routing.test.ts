import assert from 'node:assert/strict';
import { actionWorkflowId, jobWorkflowId, providerTaskQueue } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { stepsOf } from '../support/history';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { ScriptedProvider } from '../support/providers';
import { Stack, startStack } from '../support/stack';

/** Where each provider call ran, from the workflow's history: `type@queue`, `local` for a render in its own worker. */
async function providerCalls(stack: Stack, workflowId: string): Promise<string[]> {
  const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  return stepsOf(history.events!).filter((step) => ['generateAsset', 'advanceVideoRender'].includes(step.type)).map((step) => `${step.type}@${step.queue}`);
}

describe('provider routing', function () {
  this.timeout(90_000);
  let stack: Stack;
  let remoteLike: Stack;
  before(async () => {
    stack = await startStack();
    // A provider that does not render in the worker's process (as Gemini and Runway): its calls take its queue.
    remoteLike = await startStack({ provider: new ScriptedProvider([]) });
  });
  after(() => Promise.all([stack.stop(), remoteLike.stop()]));

  it('a photo and a v2 job of a remote provider run their provider calls on the provider\'s own task queue, and record the provider', async () => {
    const { accountId, apiKey } = await newAccount(remoteLike.db, 50);
    const call = apiClient(remoteLike.baseUrl, apiKey);
    const queue = providerTaskQueue(remoteLike.taskQueue, 'scripted');
    const image = await jpegBase64(400, 500);

    const photo = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home' });
    const job = await call('POST', '/api/v2/jobs/generate', { images: [{ data: image }], product_name: 'Cup', category_id: 'home' });
    for (const res of [photo, job]) assert.ok([200, 202].includes(res.status), JSON.stringify(res.body));
    await remoteLike.temporal.workflow.getHandle(actionWorkflowId(photo.body.action_id)).result();
    await remoteLike.temporal.workflow.getHandle(jobWorkflowId(job.body.job_id)).result();

    assert.deepEqual(await providerCalls(remoteLike, actionWorkflowId(photo.body.action_id)), [`generateAsset@${queue}`]);
    assert.deepEqual(await providerCalls(remoteLike, jobWorkflowId(job.body.job_id)), [`generateAsset@${queue}`]);
    const rows = await remoteLike.db.query('SELECT status, provider FROM actions WHERE account_id = $1 ORDER BY id', [accountId]);
    assert.deepEqual(rows, [{ status: 'completed', provider: 'scripted' }, { status: 'completed', provider: 'scripted' }]);
    await assertMoneyConsistent(remoteLike.db, accountId);
  });

  it('an image the local renderer has no room for takes its queue: one place, two photos at once, each rendered once and charged once', async () => {
    const narrow = await startStack({ provider: new LocalRenderer({ delayMs: 1500, maxConcurrent: 1 }) });
    try {
      const { accountId, apiKey } = await newAccount(narrow.db, 50);
      const call = apiClient(narrow.baseUrl, apiKey);
      const body = { images: [{ data: await jpegBase64(400, 500) }], product_name: 'Cup', category_id: 'home' };
      const photos = await Promise.all([call('POST', `${V1}/generate/photo`, body), call('POST', `${V1}/generate/photo`, body)]);
      const ids = photos.map((res) => { assert.equal(res.status, 200, JSON.stringify(res.body)); return res.body.action_id as number; });
      for (const id of ids) assert.equal((await narrow.temporal.workflow.getHandle(actionWorkflowId(id)).result()).status, 'completed');
      const queue = providerTaskQueue(narrow.taskQueue, 'local');
      const calls = await Promise.all(ids.map((id) => providerCalls(narrow, actionWorkflowId(id))));
      assert.deepEqual(calls.map((c) => c.join(' ')).sort(), ['generateAsset@local', `generateAsset@local generateAsset@${queue}`].sort(),
        'one rendered in its task, the other refused at once (RendererBusy) and rendered on the queue');
      const rows = await narrow.db.query('SELECT status, asset_path FROM actions WHERE account_id = $1', [accountId]);
      assert.ok(rows.every((r: { status: string; asset_path: string }) => r.status === 'completed' && r.asset_path));
      await assertMoneyConsistent(narrow.db, accountId);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 40, available: 40, holds: 0 });
    } finally {
      await narrow.stop();
    }
  });

  it('the local renderer renders images in the workflow\'s own worker (no task queue) and videos on its queue, and records the provider', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 50);
    const call = apiClient(stack.baseUrl, apiKey);
    const queue = providerTaskQueue(stack.taskQueue, 'local');
    const image = await jpegBase64(400, 500);

    const photo = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home' });
    const job = await call('POST', '/api/v2/jobs/generate', { images: [{ data: image }], product_name: 'Cup', category_id: 'home' });
    const video = await call('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 5 });
    for (const res of [photo, job, video]) assert.ok([200, 202].includes(res.status), JSON.stringify(res.body));

    await stack.temporal.workflow.getHandle(actionWorkflowId(photo.body.action_id)).result();
    await stack.temporal.workflow.getHandle(jobWorkflowId(job.body.job_id)).result();
    await stack.temporal.workflow.getHandle(actionWorkflowId(video.body.action_id)).result();

    assert.deepEqual(await providerCalls(stack, actionWorkflowId(photo.body.action_id)), ['generateAsset@local']);
    assert.deepEqual(await providerCalls(stack, jobWorkflowId(job.body.job_id)), ['generateAsset@local']);
    assert.deepEqual(await providerCalls(stack, actionWorkflowId(video.body.action_id)), [`advanceVideoRender@${queue}`], 'the local renderer finishes a video in one step');

    const rows = await stack.db.query('SELECT status, provider FROM actions WHERE account_id = $1 ORDER BY id', [accountId]);
    assert.deepEqual(rows, [{ status: 'completed', provider: 'local' }, { status: 'completed', provider: 'local' }, { status: 'completed', provider: 'local' }]);
    const [{ provider }] = await stack.db.query('SELECT provider FROM jobs WHERE id = $1', [job.body.job_id]);
    assert.equal(provider, 'local');
    await assertMoneyConsistent(stack.db, accountId);
  });
});
