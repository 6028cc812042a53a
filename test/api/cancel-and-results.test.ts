import assert from 'node:assert/strict';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { actionWorkflowId } from '../../src/temporal/contract';
import { createProviderWorkers, createWorker } from '../../app/worker';
import { testEnvironment } from '../support/environment';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('cancel, results and download over HTTP', function () {
  this.timeout(60_000);
  let image: string;
  before(async () => {
    image = await jpegBase64();
  });

  describe('before any worker picks the action up', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ withWorker: false });
    });
    after(() => stack.stop());

    it('cancels a pending action at once, releases the hold, and the workflow ends without work', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      assert.equal((await call('GET', `${V1}/balance`)).body.holds, 5);

      const cancel = await call('POST', `${V1}/cancel/${created.action_id}`);
      assert.equal(cancel.status, 200);
      assert.deepEqual({ ...cancel.body, message: undefined }, { action_id: created.action_id, status: 'cancelled', cancelled: true, message: undefined });
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      assert.equal((await call('GET', `${V1}/status/${created.action_id}`)).body.status, 'cancelled');
      const again = await call('POST', `${V1}/cancel/${created.action_id}`);
      assert.deepEqual([again.body.status, again.body.cancelled], ['cancelled', true], 'cancel is idempotent');

      // Workers arrive later: the render step finds the action cancelled and ends without rendering or charging.
      const env = testEnvironment();
      const setup = { address: env.temporalAddress, namespace: 'default', taskQueue: stack.taskQueue, deps: stack.deps };
      const { worker, connection } = await createWorker({ ...setup, workflowBundle: env.workflowBundle });
      const [provider] = await createProviderWorkers(setup, connection, [stack.deps.providers.image.name], () => ({ maxConcurrent: 1, maxPerSecond: 0 }));
      const result = stack.temporal.workflow.getHandle(actionWorkflowId(created.action_id)).result();
      const outcome = await worker.runUntil(provider.runUntil(result));
      await connection.close();
      assert.deepEqual(outcome, { status: 'cancelled' });
      const [row] = await stack.db.query('SELECT status, asset_path FROM actions WHERE id = $1', [created.action_id]);
      assert.deepEqual(row, { status: 'cancelled', asset_path: null });
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('answers 202 with a status body from download while the action is pending', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const created = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      const res = await call('GET', `${V1}/results/${created.action_id}/download`);
      assert.equal(res.status, 202);
      assert.equal(res.headers.get('retry-after'), '5');
      assert.deepEqual([res.body.action_id, res.body.status], [created.action_id, 'pending']);
      await call('POST', `${V1}/cancel/${created.action_id}`);
      const cancelled = await call('GET', `${V1}/results/${created.action_id}/download`);
      assert.deepEqual([cancelled.status, cancelled.body.detail.error, cancelled.body.detail.details], [409, 'result_unavailable', { status: 'cancelled' }]);
    });
  });

  describe('while the provider is rendering', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ provider: new LocalRenderer({ delayMs: 20_000 }) });
    });
    after(() => stack.stop());

    it('requests cancellation (cancelled: false), and the render stops, releasing the hold', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      await eventually(async () => (await call('GET', `${V1}/status/${created.action_id}`)).body.status, (s) => s === 'processing');
      const cancel = await call('POST', `${V1}/cancel/${created.action_id}`);
      assert.deepEqual([cancel.body.status, cancel.body.cancelled], ['processing', false]);
      assert.match(cancel.body.message, /Cancel requested/);

      const outcome = await stack.temporal.workflow.getHandle(actionWorkflowId(created.action_id)).result();
      assert.deepEqual(outcome, { status: 'cancelled' });
      const status = (await call('GET', `${V1}/status/${created.action_id}`)).body;
      assert.deepEqual([status.status, status.result_url], ['cancelled', null]);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  describe('finished actions', () => {
    let stack: Stack;
    let call: ReturnType<typeof apiClient>;
    let ids: { done: number; other: number; project: number };
    before(async () => {
      stack = await startStack();
      const account = await newAccount(stack.db, 50);
      call = apiClient(stack.baseUrl, account.apiKey);
      const project = (await call('POST', `${V1}/projects`, { name: 'results' })).body;
      const done = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], project_id: project.id, client_group_id: 'batch-1' })).body;
      const other = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      await Promise.all([done, other].map((a) => stack.temporal.workflow.getHandle(actionWorkflowId(a.action_id)).result()));
      ids = { done: done.action_id, other: other.action_id, project: project.id };
    });
    after(() => stack.stop());

    it('cancel of a completed action changes nothing', async () => {
      const res = await call('POST', `${V1}/cancel/${ids.done}`);
      assert.deepEqual([res.body.status, res.body.cancelled], ['completed', false]);
    });

    it('download redirects to the signed URL, which serves the image', async () => {
      const res = await call('GET', `${V1}/results/${ids.done}/download`);
      assert.equal(res.status, 302);
      const image = await fetch(res.headers.get('location')!);
      assert.deepEqual([image.status, image.headers.get('content-type')], [200, 'image/jpeg']);
    });

    it('lists results newest first with filters, paging and 30-day URLs', async () => {
      const all = (await call('GET', `${V1}/results`)).body;
      assert.deepEqual([all.total, all.page, all.page_size], [2, 1, 20]);
      assert.deepEqual(all.items.map((i: { action_id: number }) => i.action_id), [ids.other, ids.done]);
      const item = all.items[1];
      assert.equal(item.status, 'completed');
      assert.equal(item.client_group_id, 'batch-1');
      assert.ok(Math.abs(new Date(item.result_url_expires_at).getTime() - Date.now() - 30 * 86400_000) < 60_000);

      const byGroup = (await call('GET', `${V1}/results?client_group_id=batch-1`)).body;
      assert.deepEqual(byGroup.items.map((i: { action_id: number }) => i.action_id), [ids.done]);
      const byProject = (await call('GET', `${V1}/results?project_id=${ids.project}`)).body;
      assert.deepEqual(byProject.items.map((i: { action_id: number }) => i.action_id), [ids.done]);
      assert.equal((await call('GET', `${V1}/results?type=edit`)).body.total, 0);
      assert.equal((await call('GET', `${V1}/results?status=completed&type=generate`)).body.total, 2);
      const page2 = (await call('GET', `${V1}/results?page=2&page_size=1`)).body;
      assert.deepEqual([page2.items.length, page2.items[0].action_id, page2.total], [1, ids.done, 2]);

      const today = new Date().toISOString().slice(0, 10);
      const tomorrow = new Date(Date.now() + 86400_000).toISOString().slice(0, 10);
      assert.equal((await call('GET', `${V1}/results?created_after=${today}`)).body.total, 2);
      assert.equal((await call('GET', `${V1}/results?created_before=${today}`)).body.total, 0);
      assert.equal((await call('GET', `${V1}/results?created_after=${tomorrow}`)).body.total, 0);
    });

    it('validates result filters with 422', async () => {
      for (const query of ['page=0', 'page=1001', 'page_size=101', 'created_after=2026-13-01', 'created_after=2026-01-01T00:00', 'type=card', `client_group_id=${'x'.repeat(101)}`]) {
        assert.equal((await call('GET', `${V1}/results?${query}`)).status, 422, query);
      }
    });

    it('403 for another account\'s action on cancel and download, 404 for unknown', async () => {
      const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db)).apiKey);
      for (const path of [`${V1}/results/${ids.done}/download`, `${V1}/cancel/${ids.done}`]) {
        const res = await stranger(path.includes('cancel') ? 'POST' : 'GET', path);
        assert.deepEqual([res.status, res.body.detail.error], [403, 'forbidden'], path);
      }
      assert.equal((await call('GET', `${V1}/results/99999999/download`)).status, 404);
      assert.equal((await call('POST', `${V1}/cancel/99999999`)).status, 404);
    });
  });
});
