import assert from 'node:assert/strict';
import { createKey, setKeySpendLimit } from '../../src/accounts/accounts';
import { readPriceList } from '../../src/billing/pricing';
import { readKeySpend } from '../../src/billing/sparks';
import { reserveHelperCall } from '../../src/helper-usage/usage';
import { checkInvariants } from '../faults/invariants';
import { apiClient, assertMoneyConsistent, jpegBase64, moneyOf, newAccount, V1 } from '../support/fixtures';
import { Stack, startApiPair, startStack } from '../support/stack';

describe('quotes and monthly spend limits', function () {
  this.timeout(120_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack({ withWorker: false }); // accepted actions stay pending: their holds stay open
    image = await jpegBase64(320, 320);
  });
  after(() => stack.stop());

  const photo = () => ({ images: [{ data: image }], product_name: 'Cup', category_id: 'home' });

  describe('POST /quote', () => {
    it('prices each kind of request as its route would, with the available sparks, holding nothing', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 7);
      const call = apiClient(stack.baseUrl, apiKey);
      const prices = await readPriceList(stack.db, { fresh: true });
      const quotes = [
        [{ type: 'photo' }, prices.generation],
        [{ type: 'photo', resolution: '4K', ...photo() }, prices.generation + 2],
        [{ type: 'card', style: 'cinematic' }, prices.generation],
        [{ type: 'video', duration_sec: 10 }, prices.video_10sec],
        [{ type: 'video' }, prices.video_5sec],
        [{ type: 'edit', instruction: 'brighter' }, prices.improvement],
      ] as const;
      for (const [body, price] of quotes) {
        const res = await call('POST', `${V1}/quote`, body);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual(res.body, { type: body.type, price, available: 7, affordable: price <= 7 }, JSON.stringify(body));
      }
      const [money] = await moneyOf(stack.db, [accountId]);
      assert.deepEqual([money.balance, money.held], [7, 0], 'nothing held');
    });

    it('answers 422 for a missing or unknown type and for a field its request would refuse', async () => {
      const { apiKey } = await newAccount(stack.db, 7);
      const call = apiClient(stack.baseUrl, apiKey);
      for (const body of [{}, { type: 'hologram' }, { type: 'photo', resolution: '8K' }, { type: 'photo', images: [] }, { type: 'video', duration_sec: 7 }, { type: 'edit', instruction: '' }]) {
        const res = await call('POST', `${V1}/quote`, body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.ok(Array.isArray(res.body.detail), JSON.stringify(res.body));
      }
    });

    it('says not affordable when the key\'s monthly spend limit would be passed, whatever the balance', async () => {
      const { apiKey, keyId } = await newAccount(stack.db, 100);
      await setKeySpendLimit(stack.db, keyId, 1);
      const res = await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/quote`, { type: 'photo' });
      assert.equal(res.body.available, 100);
      assert.equal(res.body.affordable, false);
    });
  });

  describe('monthly spend limit of a key', () => {
    it('refuses a request that would pass it with 402 spend_limit_exceeded and its details, holding nothing', async () => {
      const { accountId, apiKey, keyId } = await newAccount(stack.db, 100);
      const price = (await readPriceList(stack.db, { fresh: true })).generation;
      await setKeySpendLimit(stack.db, keyId, price + 1);
      const call = apiClient(stack.baseUrl, apiKey);
      assert.equal((await call('POST', `${V1}/generate/photo`, photo())).status, 200);
      const refused = await call('POST', `${V1}/generate/photo`, photo());
      assert.equal(refused.status, 402);
      assert.equal(refused.body.detail.error, 'spend_limit_exceeded');
      assert.deepEqual(refused.body.detail.details, { limit: price + 1, spent: price, required: price });
      assert.deepEqual(await readKeySpend(stack.db, keyId), { limit: price + 1, spent: price });
      const { held } = await assertMoneyConsistent(stack.db, accountId);
      assert.equal(held, price, 'only the first request holds');
      // Another key of the account has no limit.
      const other = await createKey(stack.db, accountId, 'other', 'api_key_inbox');
      assert.equal((await apiClient(stack.baseUrl, other.apiKey)('POST', `${V1}/generate/photo`, photo())).status, 200);
    });

    it('counts what is held or charged, not what was released: a cancel makes room again', async () => {
      const { apiKey, keyId } = await newAccount(stack.db, 100);
      const price = (await readPriceList(stack.db, { fresh: true })).generation;
      await setKeySpendLimit(stack.db, keyId, price);
      const call = apiClient(stack.baseUrl, apiKey);
      const first = await call('POST', `${V1}/generate/photo`, photo());
      assert.equal((await call('POST', `${V1}/generate/photo`, photo())).body.detail.error, 'spend_limit_exceeded');
      const cancelled = await call('POST', `${V1}/cancel/${first.body.action_id}`);
      assert.equal(cancelled.body.cancelled, true, JSON.stringify(cancelled.body));
      assert.equal((await readKeySpend(stack.db, keyId)).spent, 0);
      assert.equal((await call('POST', `${V1}/generate/photo`, photo())).status, 200);
      // Removing the limit lets everything through again.
      await setKeySpendLimit(stack.db, keyId, null);
      assert.equal((await call('POST', `${V1}/generate/photo`, photo())).status, 200);
      assert.deepEqual(await readKeySpend(stack.db, keyId), { limit: null, spent: 2 * price });
    });

    it('stays equal to what the key holds while cancels and new requests of the key race (no deadlock, no 500)', async () => {
      const { apiKey, keyId } = await newAccount(stack.db, 10_000);
      const price = (await readPriceList(stack.db, { fresh: true })).generation;
      await setKeySpendLimit(stack.db, keyId, 30 * price);
      const call = apiClient(stack.baseUrl, apiKey);
      const placed = await Promise.all(Array.from({ length: 20 }, () => call('POST', `${V1}/generate/photo`, photo())));
      const answers = await Promise.all([
        ...placed.map((p) => call('POST', `${V1}/cancel/${p.body.action_id}`)),
        ...Array.from({ length: 20 }, () => call('POST', `${V1}/generate/photo`, photo())),
      ]);
      assert.deepEqual(answers.filter((a) => a.status >= 500).map((a) => JSON.stringify(a.body)), []);
      const [{ open }] = await stack.db.query(
        `SELECT COALESCE(SUM(amount), 0)::int AS open FROM spark_holds WHERE key_id = $1 AND status IN ('held', 'charged')`, [keyId]);
      assert.equal((await readKeySpend(stack.db, keyId)).spent, open);
      assert.ok(open <= 30 * price);
    });

    it('is what the fault suite\'s checker holds it to: a key spend off its holds is a violation', async () => {
      const { accountId, apiKey, keyId } = await newAccount(stack.db, 100);
      assert.equal((await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, photo())).status, 200);
      const check = () => checkInvariants(stack.db, stack.temporal, '/nonexistent', [accountId]); // no completed action: no asset looked for
      assert.deepEqual((await check()).violations, []);
      await stack.db.query('UPDATE key_spend SET sparks = sparks + 1 WHERE key_id = $1', [keyId]);
      assert.deepEqual((await check()).violations.filter((v) => v.startsWith(`key ${keyId}:`)).length, 1);
    });

    it('counts AI helper charges: a paid block of helper calls holds against the key that called', async () => {
      const { accountId, keyId } = await newAccount(stack.db, 100);
      await stack.db.query(`INSERT INTO helper_usage (account_id, day, used, pending) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 100, 0)`, [accountId]);
      await reserveHelperCall(stack.db, accountId, keyId); // the 101st call of the day opens a paid block: 1 spark held
      assert.equal((await readKeySpend(stack.db, keyId)).spent, 1);
      await setKeySpendLimit(stack.db, keyId, 1);
      await stack.db.query(`UPDATE helper_usage SET used = 120, pending = 0 WHERE account_id = $1`, [accountId]);
      await assert.rejects(reserveHelperCall(stack.db, accountId, keyId), (err: { code?: string }) => err.code === 'spend_limit_exceeded');
    });

    it('is exact under 200 concurrent requests on one key across two API processes: the limit is reached mid-burst, never passed', async () => {
      const [a, b] = await startApiPair(1_000_000);
      try {
        const price = (await readPriceList(a.db, { fresh: true })).generation;
        const { accountId, apiKey, keyId } = await newAccount(a.db, 10_000);
        const fits = 13;
        await setKeySpendLimit(a.db, keyId, fits * price + price - 1); // room for 13, not 14
        const calls = [apiClient(a.baseUrl, apiKey), apiClient(b.baseUrl, apiKey)];
        const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => calls[i % 2]('POST', `${V1}/generate/photo`, photo())));
        const statuses = answers.map((r) => (r.status === 200 ? 'accepted' : `${r.status} ${r.body.detail?.error}`));
        assert.equal(statuses.filter((s) => s === 'accepted').length, fits, JSON.stringify([...new Set(statuses)]));
        assert.deepEqual([...new Set(statuses.filter((s) => s !== 'accepted'))], ['402 spend_limit_exceeded']);
        assert.deepEqual(await readKeySpend(a.db, keyId), { limit: fits * price + price - 1, spent: fits * price });
        const { held } = await assertMoneyConsistent(a.db, accountId);
        assert.equal(held, fits * price);
        const actions = await a.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
        assert.equal(actions[0].n, fits, 'no action of a refused request');
      } finally {
        await a.stop();
        await b.stop();
      }
    });
  });
});
