import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { acceptNextItems, takeBatchStep } from '../../src/batches/run';
import { createBatch } from '../../src/batches/store';
import { reconcileBatches, settleStarts } from '../../src/actions/reconcile';
import { grantSparks } from '../../src/billing/sparks';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { batchTaskQueue, batchWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { openSse } from '../support/sse-client';
import { Stack, startStack } from '../support/stack';

const V2 = '/api/v2';

describe('v2 catalogue batches', function () {
  this.timeout(120_000);
  let image: string;
  let small: string;
  before(async () => {
    image = await jpegBase64(400, 500, '#c08030');
    small = await jpegBase64(200, 200, '#3080c0');
  });
  const photo = (externalId: string, extra: object = {}) => ({
    external_id: externalId, type: 'photo', images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K', ...extra,
  });

  describe('with the local renderer', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack();
    });
    after(() => stack.stop());

    const finished = (batchId: string) => stack.temporal.workflow.getHandle(batchWorkflowId(batchId)).result();

    it('runs photos, a card, a video and an edit as v2 jobs, once each, and serves their manifest', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      const first = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Lamp', category_id: 'home', resolution: '1K' });
      await stack.temporal.workflow.getHandle(`action-${first.body.action_id}`).result();
      const upload = await call('POST', `${V1}/upload`, { image: { data: image } });
      assert.equal(upload.status, 201, JSON.stringify(upload.body));

      const created = await call('POST', `${V2}/batches`, {
        items: [
          photo('sku-1'),
          photo('sku-2', { images: [{ data: upload.body.upload_id }] }),
          { external_id: 'sku-3', type: 'card', images: [{ data: image }], product_name: 'Vase', category_id: 'home', user_text: 'Handmade' },
          { external_id: 'sku-4', type: 'video', image: { data: image }, duration_sec: 5 },
          { external_id: 'sku-5', type: 'edit', action_id: first.body.action_id, instruction: 'warmer light' },
        ],
        client_group_id: 'spring',
      });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const batch = created.body;
      assert.equal(batch.status, 'queued');
      assert.deepEqual([batch.items, batch.counts.pending, batch.held, batch.charged], [5, 5, 0, 0]);
      assert.equal((await finished(batch.batch_id)).status, 'completed');

      const done = (await call('GET', batch.status_url)).body;
      assert.equal(done.status, 'completed');
      assert.equal(done.counts.succeeded, 5);
      assert.deepEqual([done.held, done.charged, done.check_again_in_sec], [0, batch.price, null]);
      const balance = (await call('GET', `${V1}/balance`)).body.balance;
      assert.equal(balance, 100 - 5 - batch.price, 'each item charged once, at its price');
      await assertMoneyConsistent(stack.db, accountId);

      const items = (await call('GET', `${batch.items_url}?limit=2`)).body;
      assert.deepEqual(items.items.map((i: { external_id: string }) => i.external_id), ['sku-1', 'sku-2']);
      assert.equal(items.next_after, 2);
      const rest = (await call('GET', `${batch.items_url}?after=2`)).body;
      assert.deepEqual(rest.items.map((i: { external_id: string; status: string }) => `${i.external_id}:${i.status}`), ['sku-3:succeeded', 'sku-4:succeeded', 'sku-5:succeeded']);
      assert.equal(rest.next_after, null);
      const video = rest.items[1];
      assert.equal((await fetch(video.result_url)).status, 200);
      const job = (await call('GET', `${V2}/jobs/${video.job_id}`)).body;
      assert.deepEqual([job.type, job.status], ['video.execute', 'succeeded']);
      // Each item's job is a workflow of its own on the batch queue, started by the batch's step: not its child.
      const history = await stack.temporal.workflow.getHandle(batchWorkflowId(batch.batch_id)).fetchHistory();
      assert.ok(!history.events!.some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes), 'no child workflow in the batch\'s history');
      assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(video.job_id)).describe()).taskQueue, batchTaskQueue(stack.taskQueue));
      const types = await stack.db.query(`SELECT j.type, a.client_group_id FROM batch_items i JOIN jobs j ON j.id = i.job_id JOIN actions a ON a.id = i.action_id
        WHERE i.batch_id = $1 ORDER BY i.position`, [batch.batch_id]);
      assert.deepEqual(types.map((t: { type: string }) => t.type), ['generation.execute', 'generation.execute', 'card.execute', 'video.execute', 'edit.execute']);
      assert.ok(types.every((t: { client_group_id: string }) => t.client_group_id === 'spring'));

      const jsonl = await fetch(`${stack.baseUrl}${batch.results_url}`, { headers: { Authorization: `Bearer ${apiKey}` } });
      assert.equal(jsonl.headers.get('content-type'), 'application/x-ndjson');
      const lines = (await jsonl.text()).trim().split('\n').map((line) => JSON.parse(line));
      assert.deepEqual(lines.map((l) => l.external_id), ['sku-1', 'sku-2', 'sku-3', 'sku-4', 'sku-5']);
      assert.ok(lines.every((l) => l.status === 'succeeded' && l.result_url));
      const csv = await (await fetch(`${stack.baseUrl}${V2}/batches/${batch.batch_id}/results.csv`, { headers: { Authorization: `Bearer ${apiKey}` } })).text();
      const rows = csv.trim().split('\n');
      assert.equal(rows[0], 'position,external_id,type,status,phase,job_id,error_code,error_message,result_url,result_url_expires_at');
      assert.equal(rows.length, 6);
      assert.match(rows[4], /^4,sku-4,video,succeeded,completed,/);

      const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db, 10)).apiKey);
      for (const path of [batch.status_url, batch.items_url, batch.results_url, `${V2}/batches/${batch.batch_id}/results.csv`]) {
        assert.equal((await stranger('GET', path)).status, 404, path);
      }
      assert.equal((await stranger('POST', `${V2}/batches/${batch.batch_id}/cancel`)).status, 404);
      assert.equal((await call('GET', `${V2}/batches/not-a-uuid`)).status, 404);
    });

    it('refuses a batch with invalid items all at once, holding and writing nothing; with ?partial=true runs the valid ones', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      const foreign = await apiClient(stack.baseUrl, (await newAccount(stack.db, 10)).apiKey)('POST', `${V1}/upload`, { image: { data: image } });
      const items = [
        photo('ok-1'),
        photo('ok-1'),
        { external_id: 'bad-type', type: 'poster' },
        photo('foreign', { images: [{ data: foreign.body.upload_id }] }),
        photo('broken', { images: [{ data: 'bm90IGFuIGltYWdl' }] }),
        { external_id: 'cinematic', type: 'card', images: [{ data: image }], style: 'cinematic', design_key: 'x' },
        { external_id: 'tiny', type: 'video', image: { data: small } },
        { external_id: 'edit-missing', type: 'edit', action_id: 2147483000, instruction: 'x' },
        photo('ok-2'),
      ];
      const refused = await call('POST', `${V2}/batches`, { items });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.detail.error, 'invalid_items');
      const invalid = refused.body.detail.details.items;
      assert.deepEqual(invalid.map((i: { index: number; external_id: string }) => `${i.index}:${i.external_id}`),
        ['1:ok-1', '2:bad-type', '3:foreign', '4:broken', '5:cinematic', '6:tiny', '7:edit-missing']);
      assert.deepEqual(invalid.map((i: { errors: { code: string }[] }) => i.errors[0].code),
        ['duplicate', 'enum', 'upload_not_found', 'invalid_request', 'unsupported_parameter', 'image_too_small', 'not_found']);
      assert.equal((await stack.db.query('SELECT count(*)::int AS n FROM batches WHERE account_id = $1', [accountId]))[0].n, 0);

      const partial = await call('POST', `${V2}/batches?partial=true`, { items });
      assert.equal(partial.status, 202, JSON.stringify(partial.body));
      assert.deepEqual([partial.body.counts.pending, partial.body.counts.invalid], [2, 7]);
      assert.equal((await finished(partial.body.batch_id)).status, 'completed_with_errors');
      const all = (await call('GET', `${partial.body.items_url}?status=invalid`)).body.items;
      assert.equal(all.length, 7);
      assert.deepEqual(all.map((i: { external_id: string; type: string | null }) => `${i.external_id}:${i.type}`).slice(0, 2), ['ok-1:photo', 'bad-type:null'], 'as sent');
      assert.equal((await call('GET', partial.body.status_url)).body.counts.succeeded, 2);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('takes NDJSON, with its line numbers in every refusal', async () => {
      const { apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      const ndjson = (lines: string[]) => call('POST', `${V2}/batches?max_sparks=10`, lines.join('\n'), { 'Content-Type': 'application/x-ndjson' });
      const broken = await ndjson([JSON.stringify(photo('a')), '{"external_id": "b", ', '', '[1]', JSON.stringify(photo('c'))]);
      assert.equal(broken.status, 422, JSON.stringify(broken.body));
      assert.deepEqual(broken.body.detail.map((i: { loc: unknown[] }) => i.loc), [['body', 2], ['body', 4]]);
      const tooMany = await call('POST', `${V2}/batches`, `${'{}\n'.repeat(10_001)}`, { 'Content-Type': 'application/x-ndjson' });
      assert.equal(tooMany.status, 422);
      assert.match(tooMany.body.detail[0].msg, /10000 lines/);
      const oversize = await ndjson([JSON.stringify(photo('a')), JSON.stringify({ external_id: 'e', type: 'edit', action_id: 1, instruction: 'x'.repeat(200_000) })]);
      assert.equal(oversize.status, 422);
      assert.deepEqual(oversize.body.detail.details.items.map((i: { line: number; errors: { code: string }[] }) => `${i.line}:${i.errors[0].code}`), ['2:request_too_large']);

      const accepted = await ndjson([JSON.stringify(photo('a')), JSON.stringify(photo('b')), JSON.stringify(photo('c'))]);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.equal(accepted.body.max_sparks, 10);
      assert.equal((await finished(accepted.body.batch_id)).status, 'budget_exhausted');
      const done = (await call('GET', accepted.body.status_url)).body;
      assert.deepEqual([done.counts.succeeded, done.counts.skipped, done.charged], [2, 1, 10], 'two 5-spark photos fit in 10; the third is skipped, nothing held for it');
    });

    it('continues as new between items, carrying its place and its spending: each item once, the budget across runs', async () => {
      const { accountId, keyId } = await newAccount(stack.db, 100);
      const batchId = randomUUID();
      const request = { images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K', photo_style: 'classic', aspect_ratio: '3:4' };
      await createBatch(stack.db, {
        id: batchId, accountId, keyId, maxSparks: 20, webhookUrl: null, itemEvents: false, clientGroupId: null, acceptLanguage: null, sandboxScenario: null,
        items: [1, 2, 3, 4, 5].map((position) => ({ position, external_id: `c${position}`, type: 'photo' as const, request, price: 5, status: 'pending' as const })),
      }, undefined, { status: 202, body: {} });
      const handle = await stack.temporal.workflow.start('batchWorkflow', {
        taskQueue: stack.taskQueue, workflowId: batchWorkflowId(batchId), args: [{ batchId, itemsPerRun: 2 }],
      });
      assert.equal((await handle.result()).status, 'budget_exhausted');
      assert.notEqual((await stack.temporal.workflow.getHandle(batchWorkflowId(batchId)).describe()).runId, handle.firstExecutionRunId, 'it continued as new');
      const items = await stack.db.query('SELECT position, status, job_id FROM batch_items WHERE batch_id = $1 ORDER BY position', [batchId]);
      assert.deepEqual(items.map((i: { status: string; job_id: string | null }) => `${i.status}:${i.job_id !== null}`),
        ['running:true', 'running:true', 'running:true', 'running:true', 'skipped:false']);
      const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
      assert.equal(n, 4, 'four 5-spark items in a ceiling of 20, across three runs; one action each');
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('a run continued from one that started its items as children (on the main queue) moves to the batch queue and takes steps there', async () => {
      const { accountId, keyId } = await newAccount(stack.db, 100);
      const batchId = randomUUID();
      const request = { images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K', photo_style: 'classic', aspect_ratio: '3:4' };
      await createBatch(stack.db, {
        id: batchId, accountId, keyId, maxSparks: null, webhookUrl: null, itemEvents: false, clientGroupId: null, acceptLanguage: null, sandboxScenario: null,
        items: [1, 2, 3].map((position) => ({ position, external_id: `o${position}`, type: 'photo' as const, request, price: 5, status: 'pending' as const })),
      }, undefined, { status: 202, body: {} });
      await stack.db.query(`UPDATE batches SET status = 'running', started_at = now() WHERE id = $1`, [batchId]);
      // What an older run's continue-as-new starts: its cursor, without items in flight, on the queue it ran on.
      const handle = await stack.temporal.workflow.start('batchWorkflow', {
        taskQueue: stack.taskQueue, workflowId: batchWorkflowId(batchId), args: [{ batchId, cursor: { after: 0, spent: 0 } }],
      });
      assert.equal((await handle.result()).status, 'completed');
      const last = await stack.temporal.workflow.getHandle(batchWorkflowId(batchId)).describe();
      assert.notEqual(last.runId, handle.firstExecutionRunId, 'it continued as new');
      assert.equal(last.taskQueue, batchTaskQueue(stack.taskQueue));
      const items = await stack.db.query(`SELECT count(*)::int AS n FROM batch_items i JOIN jobs j ON j.id = i.job_id WHERE i.batch_id = $1 AND j.status = 'succeeded'`, [batchId]);
      assert.equal(items[0].n, 3);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('stops at the balance without a ceiling, answers a repeated Idempotency-Key with the same batch, and never accepts an item twice', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 12);
      const call = apiClient(stack.baseUrl, apiKey);
      const body = { items: [photo('a'), photo('b'), photo('c')] };
      const [one, two] = await Promise.all([0, 1].map(() => call('POST', `${V2}/batches`, body, { 'Idempotency-Key': 'catalogue-1' })));
      assert.deepEqual([one.status, two.status], [202, 202]);
      assert.equal(one.body.batch_id, two.body.batch_id);
      assert.equal((await stack.db.query('SELECT count(*)::int AS n FROM batches WHERE account_id = $1', [accountId]))[0].n, 1);
      assert.equal((await finished(one.body.batch_id)).status, 'budget_exhausted');
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 2);
      await assertMoneyConsistent(stack.db, accountId);

      // The accept step, run again from the same place (a lost worker's retry): the same jobs, no second action.
      await grantSparks(stack.db.manager, accountId, 10, 'grant:test-top-up');
      const again = await call('POST', `${V2}/batches`, { items: [photo('x')] });
      await finished(again.body.batch_id);
      const [item] = await stack.db.query('SELECT job_id, action_id FROM batch_items WHERE batch_id = $1', [again.body.batch_id]);
      await stack.db.query(`UPDATE batches SET status = 'running' WHERE id = $1`, [again.body.batch_id]);
      const retried = await takeBatchStep({ ...stack.deps, temporal: stack.temporal }, again.body.batch_id, { after: 0, spent: 0, inFlight: [] });
      assert.deepEqual(retried.accepted, [{ position: 1, price: 5 }]);
      // So does the step of runs started before `accept-starts-items`, which answered the item for a child.
      const retriedAsChild = await acceptNextItems(stack.deps, again.body.batch_id, { after: 0, inFlight: 0, spent: 0 });
      assert.deepEqual(retriedAsChild.accepted.map((a) => [a.job.jobId, a.job.actionId]), [[item.job_id, item.action_id]]);
      assert.equal((await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]))[0].n, 3);
      await stack.db.query(`UPDATE batches SET status = 'completed' WHERE id = $1`, [again.body.batch_id]); // as it was
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  describe('one item at a time', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ batchLimits: { itemsInFlight: 1, accountItemsInFlight: 1 }, provider: new LocalRenderer({ delayMs: 300 }) });
    });
    after(() => stack.stop());

    it('streams the batch as it moves and ends the stream with it', async () => {
      const { apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = (await call('POST', `${V2}/batches`, { items: [photo('s1'), photo('s2'), photo('s3')] })).body;
      const stream = await openSse(`${stack.baseUrl}${V2}/batches/${created.batch_id}/events`, { Authorization: `Bearer ${apiKey}` });
      assert.equal(stream.status, 200);
      await stream.ended;
      const seen = stream.events.map((e) => `${e.event}:${e.data.status}:${e.data.counts.succeeded}`);
      assert.equal(seen[seen.length - 1], 'batch:completed:3', seen.join(' '));
      assert.ok(seen.length >= 2, `the batch was seen moving: ${seen.join(' ')}`);
      const stranger = await openSse(`${stack.baseUrl}${V2}/batches/${created.batch_id}/events`, { Authorization: `Bearer ${(await newAccount(stack.db, 10)).apiKey}` });
      assert.equal(stranger.status, 404);
    });

    it('the reconciler starts a batch whose workflow never started, and cancels one whose workflow an operator terminated', async () => {
      const { accountId, keyId, apiKey } = await newAccount(stack.db, 100);
      const config = { taskQueue: stack.taskQueue, graceSeconds: 0, startGraceSeconds: 0, webhookRetryInitialMs: 100 };
      const never = randomUUID();
      const request = { images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K', photo_style: 'classic', aspect_ratio: '3:4' };
      await createBatch(stack.db, {
        id: never, accountId, keyId, maxSparks: null, webhookUrl: null, itemEvents: false, clientGroupId: null, acceptLanguage: null, sandboxScenario: null,
        items: [{ position: 1, external_id: 'n1', type: 'photo', request, price: 5, status: 'pending' }],
      }, undefined, { status: 202, body: {} });
      assert.ok(await reconcileBatches(stack.db, stack.temporal, config) >= 1);
      assert.equal((await stack.temporal.workflow.getHandle(batchWorkflowId(never)).result()).status, 'completed');

      const created = (await apiClient(stack.baseUrl, apiKey)('POST', `${V2}/batches`, { items: Array.from({ length: 6 }, (_, i) => photo(`t${i}`)) })).body;
      await eventually(async () => (await stack.db.query(`SELECT count(*)::int AS n FROM batch_items WHERE batch_id = $1 AND job_id IS NOT NULL`, [created.batch_id]))[0].n, (n) => n > 0);
      await stack.temporal.workflow.getHandle(batchWorkflowId(created.batch_id)).terminate('an operator');
      assert.ok(await reconcileBatches(stack.db, stack.temporal, config) >= 1);
      const [batch] = await stack.db.query('SELECT status FROM batches WHERE id = $1', [created.batch_id]);
      assert.equal(batch.status, 'cancelled');
      await settleStarts(stack.db, stack.temporal, 0);
      await eventually(async () => (await stack.db.query(`SELECT count(*)::int AS n FROM actions WHERE account_id = $1 AND status IN ('pending', 'processing')`, [accountId]))[0].n, (n) => n === 0);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('cancels the items not started at once and each running one as a job, each charged or released, never both', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = await call('POST', `${V2}/batches`, { items: Array.from({ length: 12 }, (_, i) => photo(`p${i}`)) });
      assert.equal(created.status, 202);
      const cancel = await call('POST', `${V2}/batches/${created.body.batch_id}/cancel`);
      assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
      assert.equal(cancel.body.cancelled, true, JSON.stringify(cancel.body));
      assert.equal(cancel.body.batch.status, 'cancelled');
      assert.equal((await stack.temporal.workflow.getHandle(batchWorkflowId(created.body.batch_id)).result()).status, 'cancelled');
      const done = (await call('GET', created.body.status_url)).body;
      assert.equal(done.counts.succeeded + done.counts.cancelled, 12);
      assert.ok(done.counts.cancelled >= 10, JSON.stringify(done.counts));
      assert.equal(done.held, 0);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 100 - done.charged);
      assert.equal(done.charged, 5 * done.counts.succeeded);
      await assertMoneyConsistent(stack.db, accountId);
      assert.equal((await call('POST', `${V2}/batches/${created.body.batch_id}/cancel`)).body.cancelled, false);
    });
  });
});
