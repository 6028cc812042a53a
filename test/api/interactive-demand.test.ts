import assert from 'node:assert/strict';
import { InteractiveDemandMeter, publishInteractiveDemand, readInteractiveDemand } from '../../src/batches/interactive-demand';
import { batchWorkflowId } from '../../src/temporal/contract';
import { DEFAULT_BATCH_LIMITS, loadConfig } from '../../src/config';
import { createKey } from '../../src/accounts/accounts';
import { allFrom } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { SandboxRenderer } from '../../src/providers/sandbox';
import { apiClient, eventually, jpegBase64, newAccount, V1, withEnv } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/** How long a batch item's render takes on the stack below. */
const ITEM_MS = 1_500;

/** The times at which a batch's items were accepted (their actions created) and ended, in order. */
async function itemTimes(stack: Stack, batchId: string): Promise<{ created: Date; completed: Date }[]> {
  return stack.db.query(
    `SELECT a.created_at AS created, a.completed_at AS completed FROM batch_items i JOIN actions a ON a.id = i.action_id
      WHERE i.batch_id = $1 ORDER BY i.position`, [batchId]);
}

/** Each item accepted a second or more after the one before it (the yielding pace). */
function assertPaced(runs: { created: Date }[]) {
  for (let i = 1; i < runs.length; i++) {
    const gap = runs[i].created.getTime() - runs[i - 1].created.getTime();
    assert.ok(gap >= 1000, `item ${i + 1} was accepted ${gap} ms after item ${i}: ${JSON.stringify(runs)}`);
  }
}

describe('batches yield to interactive work', function () {
  this.timeout(120_000);

  it('BATCH_YIELD_AT: 1 when unset, `off` never, a number from 0.1 on; anything else stops the process', () => {
    const yieldAt = (value: string) => withEnv({ BATCH_YIELD_AT: value }, () => loadConfig()).batchLimits.yieldAt;
    assert.equal(yieldAt(''), DEFAULT_BATCH_LIMITS.yieldAt);
    assert.equal(DEFAULT_BATCH_LIMITS.yieldAt, 1);
    assert.equal(yieldAt('off'), null);
    assert.equal(yieldAt('0.5'), 0.5);
    assert.throws(() => yieldAt('0'), /BATCH_YIELD_AT must be from 0.1/);
    assert.throws(() => yieldAt('never'), /BATCH_YIELD_AT must be a non-negative number/);
  });

  it('the meter averages the requests in flight over each interval', () => {
    let now = 0;
    const meter = new InteractiveDemandMeter(() => now);
    const first = meter.begin();
    now = 250;
    const second = meter.begin();
    now = 500;
    first();
    first(); // ended once
    assert.equal(meter.take(), (1 * 250 + 2 * 250) / 500);
    now = 1000;
    assert.equal(meter.take(), 1, 'the second, still in flight, the whole interval');
    second();
    now = 1500;
    assert.equal(meter.take(), 0);
  });

  describe('on a stack', () => {
    let stack: Stack;
    const meter = new InteractiveDemandMeter();
    before(async () => {
      // Batch items take 1.5 s each (so that a step reads the demand while the batch's own are open); a sandbox
      // key's `slow` drill keeps an interactive photo in progress for 6 s.
      const local = new LocalRenderer({ delayMs: ITEM_MS });
      stack = await startStack({
        interactiveDemand: meter, batchLimits: { ...DEFAULT_BATCH_LIMITS },
        providers: allFrom(local, new SandboxRenderer(new LocalRenderer(), { slowMs: 6_000 })),
      });
    });
    after(async () => {
      await stack.db.query('DELETE FROM interactive_demand');
      await stack.stop();
    });

    it("counts the API's interactive requests, not a batch's own nor one without a key", async () => {
      const { apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      const batch = await call('POST', '/api/v2/batches', { items: [] }); // refused (no items): a batch's route all the same
      assert.equal(batch.status, 422);
      meter.take();
      for (let i = 0; i < 10; i++) assert.equal((await call('GET', '/api/v2/batches/00000000-0000-4000-8000-000000000000')).status, 404);
      assert.equal(meter.take(), 0, 'a batch route counts nothing');
      const stranger = apiClient(stack.baseUrl, 'not-a-key');
      for (let i = 0; i < 10; i++) assert.equal((await stranger('GET', `${V1}/balance`)).status, 401);
      assert.equal(meter.take(), 0, 'a request refused before its route (no key) counts nothing');
      for (let i = 0; i < 10; i++) assert.equal((await call('GET', `${V1}/balance`)).status, 200);
      assert.ok(meter.take() > 0, 'an interactive request counts');
    });

    it('publishes each process\'s demand while there is some, and removes it when it stops', async () => {
      const held = new InteractiveDemandMeter();
      const end = held.begin(); // one request in flight the whole time
      const stop = publishInteractiveDemand(stack.db, held, 50);
      await eventually(() => readInteractiveDemand(stack.db.manager), (demand) => demand.requests >= 0.99, 10_000, 20);
      end();
      await stop();
      assert.equal((await readInteractiveDemand(stack.db.manager)).requests, 0, 'its row is gone');
    });

    it('while interactive requests are at BATCH_YIELD_AT, a batch starts one item a second, and finishes', async () => {
      const image = await jpegBase64(200, 200, '#3080c0');
      const { apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      // Five requests in flight on average, as another API process would write it, kept fresh.
      const press = () => stack.db.query(`INSERT INTO interactive_demand (process, demand, at) VALUES ('test-press', 5, now())
        ON CONFLICT (process) DO UPDATE SET demand = 5, at = now()`);
      await press();
      const pressing = setInterval(() => void press(), 300);
      try {
        const items = [1, 2, 3].map((n) => ({ external_id: `y${n}`, type: 'photo', images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K' }));
        const created = await call('POST', '/api/v2/batches', { items });
        assert.equal(created.status, 202, JSON.stringify(created.body));
        assert.equal((await stack.temporal.workflow.getHandle(batchWorkflowId(created.body.batch_id)).result()).status, 'completed');
        const runs = await itemTimes(stack, created.body.batch_id);
        assert.equal(runs.length, 3);
        assertPaced(runs);
        assert.ok(runs[1].created < runs[0].completed, 'paced, not one at a time: the second started while the first ran');
      } finally {
        clearInterval(pressing);
        await stack.db.query(`DELETE FROM interactive_demand WHERE process = 'test-press'`);
      }
    });

    it('while interactive jobs are in progress (live photos, one a second), a batch starts one item a second', async () => {
      const image = await jpegBase64(200, 200, '#3080c0');
      const live = await newAccount(stack.db, 1000);
      const call = apiClient(stack.baseUrl, live.apiKey);
      const photo = async () => {
        const answer = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K' });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
      };
      await photo();
      assert.ok((await readInteractiveDemand(stack.db.manager)).jobs >= 1, 'the photo counts while it is in progress');
      // Each photo takes 1.5 s: one a second keeps one or two in progress the whole time.
      const photos: Promise<void>[] = [];
      const pressing = setInterval(() => photos.push(photo()), 1000);
      try {
        const items = [1, 2, 3].map((n) => ({ external_id: `j${n}`, type: 'photo', images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K' }));
        const created = await call('POST', '/api/v2/batches', { items });
        assert.equal(created.status, 202, JSON.stringify(created.body));
        assert.equal((await stack.temporal.workflow.getHandle(batchWorkflowId(created.body.batch_id)).result()).status, 'completed');
        assertPaced(await itemTimes(stack, created.body.batch_id));
      } finally {
        clearInterval(pressing);
        await Promise.all(photos);
      }
    });

    it("with no interactive work, a batch starts a page at once: its own items in progress and a sandbox drill are none", async function () {
      this.timeout(200_000);
      // Another test's interactive job may still be in progress (it counts for two minutes at most).
      await eventually(() => readInteractiveDemand(stack.db.manager), (demand) => demand.jobs === 0 && demand.requests === 0, 150_000, 200);
      const image = await jpegBase64(200, 200, '#3080c0');
      const live = await newAccount(stack.db, 100);
      // A sandbox key's `slow` photo (6 s) in progress the whole time: a free drill holds no batch back.
      const sandbox = await createKey(stack.db, live.accountId, 'ci', 'api_key_inbox', { sandbox: { sparks: 1000 } });
      const drill = await apiClient(stack.baseUrl, sandbox.apiKey)('POST', `${V1}/generate/photo`,
        { images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K' }, { 'X-Sandbox-Scenario': 'slow' });
      assert.equal(drill.status, 200, JSON.stringify(drill.body));
      const drillEnd = () => stack.db.query(`SELECT status, completed_at AS completed FROM actions WHERE id = $1`, [drill.body.action_id])
        .then(([row]: { status: string; completed: Date | null }[]) => row);
      assert.ok(['pending', 'processing'].includes((await drillEnd()).status));
      assert.equal((await readInteractiveDemand(stack.db.manager)).jobs, 0, 'the drill in progress counts none');
      const call = apiClient(stack.baseUrl, live.apiKey);
      const items = Array.from({ length: 12 }, (_, n) => ({ external_id: `n${n}`, type: 'photo', images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K' }));
      const created = await call('POST', '/api/v2/batches', { items });
      assert.equal((await stack.temporal.workflow.getHandle(batchWorkflowId(created.body.batch_id)).result()).status, 'completed');
      const runs = await itemTimes(stack, created.body.batch_id);
      assert.ok(runs[9].created < runs[0].completed, 'the first page (ten items) was accepted before its first item ended');
      // The second page's step read the demand while the first page's items (1.5 s each) were in progress.
      assert.ok(runs[11].created < runs[0].completed, `the second page too, while the batch's own items ran: ${JSON.stringify(runs)}`);
      const { completed } = await eventually(drillEnd, (row) => row.completed !== null);
      assert.ok(runs[11].created < completed!, 'and while the drill was in progress');
    });
  });
});
