import assert from 'node:assert/strict';
import { ProviderError } from '../../src/providers/provider';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { ScriptedProvider } from '../support/providers';
import { startStack } from '../support/stack';

const V2 = '/api/v2';
const money = (body: { price: number; held: number; charged: number }) => ({ price: body.price, held: body.held, charged: body.charged });

/** The money fields (`price`, `held`, `charged`) of the status, job and results answers through each ending. */
describe('money on the status, job and results answers', function () {
  this.timeout(90_000);
  let image: string;
  before(async () => {
    image = await jpegBase64();
  });

  it('pending: held is the price; cancelled: released, nothing held or charged (status, results, v2 job)', async () => {
    const stack = await startStack({ withWorker: false });
    try {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      assert.deepEqual(money((await call('GET', `${V1}/status/${created.action_id}`)).body), { price: 5, held: 5, charged: 0 });
      const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }], resolution: '4K' })).body;
      const jobBody = (await call('GET', job.status_url)).body;
      assert.deepEqual(money(job), money(jobBody), 'the 202 shows what GET shows: the price, held');
      assert.ok(jobBody.price > 5, '4K costs more');
      assert.deepEqual(money(jobBody), { price: jobBody.price, held: jobBody.price, charged: 0 });

      const listed = (await call('GET', `${V1}/results`)).body.items;
      assert.deepEqual(listed.map(money), [money(jobBody), { price: 5, held: 5, charged: 0 }]);

      await call('POST', `${V1}/cancel/${created.action_id}`);
      await call('POST', job.cancel_url);
      assert.deepEqual(money((await call('GET', `${V1}/status/${created.action_id}`)).body), { price: 5, held: 0, charged: 0 });
      assert.deepEqual(money((await call('GET', job.status_url)).body), { price: jobBody.price, held: 0, charged: 0 });
      assert.deepEqual((await call('GET', `${V1}/results`)).body.items.map(money),
        [{ price: jobBody.price, held: 0, charged: 0 }, { price: 5, held: 0, charged: 0 }]);
      await assertMoneyConsistent(stack.db, accountId);
    } finally {
      await stack.stop();
    }
  });

  it('completed: charged is the price and nothing is held (status, results, v2 job after a retry)', async () => {
    const provider = new ScriptedProvider([new ProviderError('upstream 503', 'unavailable', true)]);
    const stack = await startStack({ provider, jobRetryBackoffMs: 200 });
    try {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }] })).body;
      const scheduled = await eventually(async () => (await call('GET', job.status_url)).body, (j) => j.status === 'retry_scheduled');
      assert.deepEqual(money(scheduled), { price: 5, held: 5, charged: 0 }, 'a retry keeps the hold');
      assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'succeeded');
      assert.deepEqual(money((await call('GET', job.status_url)).body), { price: 5, held: 0, charged: 5 });

      const created = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      await stack.temporal.workflow.getHandle(actionWorkflowId(created.action_id)).result();
      const status = (await call('GET', `${V1}/status/${created.action_id}`)).body;
      assert.deepEqual([status.status, money(status)], ['completed', { price: 5, held: 0, charged: 5 }]);
      const listed = (await call('GET', `${V1}/results?status=completed`)).body.items;
      assert.deepEqual(listed.map(money), [{ price: 5, held: 0, charged: 5 }, { price: 5, held: 0, charged: 5 }]);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 10);
      await assertMoneyConsistent(stack.db, accountId);
    } finally {
      await stack.stop();
    }
  });

  it('failed: the hold is released, nothing charged', async () => {
    const stack = await startStack({ provider: new ScriptedProvider([new ProviderError('content policy', 'content_policy', false)]) });
    try {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      await stack.temporal.workflow.getHandle(actionWorkflowId(created.action_id)).result();
      const status = (await call('GET', `${V1}/status/${created.action_id}`)).body;
      assert.deepEqual([status.status, money(status)], ['failed', { price: 5, held: 0, charged: 0 }]);
      await assertMoneyConsistent(stack.db, accountId);
    } finally {
      await stack.stop();
    }
  });
});
