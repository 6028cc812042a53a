import assert from 'node:assert/strict';
import { InteractiveDemandMeter, publishInteractiveDemand, readInteractiveDemand } from '../../src/batches/interactive-demand';
import { batchWorkflowId } from '../../src/temporal/contract';
import { DEFAULT_BATCH_LIMITS, loadConfig } from '../../src/config';
import { apiClient, eventually, jpegBase64, newAccount, V1, withEnv } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('batches yield to interactive requests', function () {
  this.timeout(120_000);

  it('BATCH_YIELD_AT: 2 when unset, `off` never, a number from 0.1 on; anything else stops the process', () => {
    const yieldAt = (value: string) => withEnv({ BATCH_YIELD_AT: value }, () => loadConfig()).batchLimits.yieldAt;
    assert.equal(yieldAt(''), DEFAULT_BATCH_LIMITS.yieldAt);
    assert.equal(DEFAULT_BATCH_LIMITS.yieldAt, 2);
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
      stack = await startStack({ interactiveDemand: meter, batchLimits: { itemsInFlight: 50, accountItemsInFlight: 100, yieldAt: 2 } });
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
      await eventually(() => readInteractiveDemand(stack.db.manager), (demand) => demand >= 0.99, 10_000, 20);
      end();
      await stop();
      assert.equal(await readInteractiveDemand(stack.db.manager), 0, 'its row is gone');
    });

    it('while interactive demand is at BATCH_YIELD_AT, a batch runs one item at a time, and finishes', async () => {
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
        const runs: { created: Date; completed: Date }[] = await stack.db.query(
          `SELECT a.created_at AS created, a.completed_at AS completed FROM batch_items i JOIN actions a ON a.id = i.action_id
           WHERE i.batch_id = $1 ORDER BY i.position`, [created.body.batch_id]);
        assert.equal(runs.length, 3);
        for (let i = 1; i < runs.length; i++) {
          assert.ok(runs[i].created >= runs[i - 1].completed, `item ${i + 1} was accepted after item ${i} ended: ${JSON.stringify(runs)}`);
        }
      } finally {
        clearInterval(pressing);
        await stack.db.query(`DELETE FROM interactive_demand WHERE process = 'test-press'`);
      }
    });

    it('with no demand, a batch starts its items together', async () => {
      const image = await jpegBase64(200, 200, '#3080c0');
      const { apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      const items = [1, 2, 3].map((n) => ({ external_id: `n${n}`, type: 'photo', images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K' }));
      const created = await call('POST', '/api/v2/batches', { items });
      assert.equal((await stack.temporal.workflow.getHandle(batchWorkflowId(created.body.batch_id)).result()).status, 'completed');
      const [{ overlapped }] = await stack.db.query(
        `SELECT bool_or(b.created_at < a.completed_at) AS overlapped FROM batch_items i JOIN actions a ON a.id = i.action_id
         JOIN batch_items j ON j.batch_id = i.batch_id AND j.position = i.position + 1 JOIN actions b ON b.id = j.action_id WHERE i.batch_id = $1`,
        [created.body.batch_id]);
      assert.equal(overlapped, true, 'the next item was accepted before the one before it ended: one page');
    });
  });
});
