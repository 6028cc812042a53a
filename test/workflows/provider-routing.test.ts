import assert from 'node:assert/strict';
import { actionWorkflowId, jobWorkflowId, providerTaskQueue } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/** Where each provider call ran, from the workflow's history: activity type and task queue. */
async function providerCalls(stack: Stack, workflowId: string): Promise<string[]> {
  const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  return history.events!.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    return scheduled && scheduled.taskQueue?.name !== stack.taskQueue ? [`${scheduled.activityType!.name}@${scheduled.taskQueue!.name}`] : [];
  });
}

describe('provider routing', function () {
  this.timeout(90_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.stop());

  it('a photo, a v2 job and a video run their provider calls on the provider\'s own task queue, and record the provider', async () => {
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

    assert.deepEqual(await providerCalls(stack, actionWorkflowId(photo.body.action_id)), [`generateAsset@${queue}`]);
    assert.deepEqual(await providerCalls(stack, jobWorkflowId(job.body.job_id)), [`generateAsset@${queue}`]);
    assert.deepEqual(await providerCalls(stack, actionWorkflowId(video.body.action_id)), [`advanceVideoRender@${queue}`], 'the local renderer finishes a video in one step');

    const rows = await stack.db.query('SELECT status, provider FROM actions WHERE account_id = $1 ORDER BY id', [accountId]);
    assert.deepEqual(rows, [{ status: 'completed', provider: 'local' }, { status: 'completed', provider: 'local' }, { status: 'completed', provider: 'local' }]);
    const [{ provider }] = await stack.db.query('SELECT provider FROM jobs WHERE id = $1', [job.body.job_id]);
    assert.equal(provider, 'local');
    await assertMoneyConsistent(stack.db, accountId);
  });
});
