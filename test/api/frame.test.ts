import assert from 'node:assert/strict';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { createApp } from '../../api/app';
import { createDataSource } from '../../src/db/data-source';
import { revokeKey } from '../../src/accounts/accounts';
import { CATEGORIES } from '../../src/generation/catalogue';
import { apiClient, clearOfRateWindowEdge, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { testEnvironment } from '../support/environment';
import { Stack, startApiPair, startStack } from '../support/stack';

describe('API frame over HTTP', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false });
  });
  after(() => stack.stop());

  describe('authentication', () => {
    it('401 missing_authorization without the header', async () => {
      const res = await apiClient(stack.baseUrl)('GET', `${V1}/balance`);
      assert.equal(res.status, 401);
      assert.equal(res.body.detail.error, 'missing_authorization');
      assert.ok(res.headers.get('x-request-id'));
    });

    it('401 invalid_api_key for an unknown key, a malformed header and a revoked key', async () => {
      assert.equal((await apiClient(stack.baseUrl, 'ak_unknownunknownunknownunknownunknown')('GET', `${V1}/balance`)).body.detail.error, 'invalid_api_key');
      const malformed = await apiClient(stack.baseUrl)('GET', `${V1}/balance`, undefined, { Authorization: 'Basic abc' });
      assert.deepEqual([malformed.status, malformed.body.detail.error], [401, 'invalid_api_key']);
      const { apiKey, keyId } = await newAccount(stack.db);
      assert.equal((await apiClient(stack.baseUrl, apiKey)('GET', `${V1}/balance`)).status, 200);
      await revokeKey(stack.db, keyId);
      const revoked = await apiClient(stack.baseUrl, apiKey)('GET', `${V1}/balance`);
      assert.deepEqual([revoked.status, revoked.body.detail.error], [401, 'invalid_api_key']);
    });

    it('cannot be bypassed by changing the case of the path', async () => {
      for (const path of ['/API/V1/PUBLIC/categories', '/Api/v1/public/balance', '/API/V2/jobs/00000000-0000-4000-8000-000000000000']) {
        const res = await apiClient(stack.baseUrl)('GET', path);
        assert.deepEqual([res.status, res.body.detail.error], [401, 'missing_authorization'], path);
      }
      const { apiKey } = await newAccount(stack.db);
      const withKey = await apiClient(stack.baseUrl, apiKey)('GET', '/API/V1/PUBLIC/balance');
      assert.deepEqual([withKey.status, withKey.body.detail.error], [404, 'not_found'], 'routes are case-sensitive');
    });

    it('reads no body for unknown paths or before the key is checked', async () => {
      const unknown = await apiClient(stack.baseUrl)('POST', '/anything', '{"not": json', { 'Content-Type': 'application/json' });
      assert.deepEqual([unknown.status, unknown.body.detail.error], [404, 'not_found']);
      const noKey = await apiClient(stack.baseUrl)('POST', `${V1}/generate/photo`, '{"not": json', { 'Content-Type': 'application/json' });
      assert.deepEqual([noKey.status, noKey.body.detail.error], [401, 'missing_authorization']);
    });

    it('protects v2 with the same keys and error format', async () => {
      const res = await apiClient(stack.baseUrl)('GET', '/api/v2/jobs/00000000-0000-0000-0000-000000000000');
      assert.equal(res.status, 401);
      assert.equal(res.body.detail.error, 'missing_authorization');
    });
  });

  describe('errors', () => {
    let call: ReturnType<typeof apiClient>;
    before(async () => {
      call = apiClient(stack.baseUrl, (await newAccount(stack.db)).apiKey);
    });

    it('answers 422 with a detail array from AJV: a body\'s first problem, every query problem', async () => {
      const res = await call('POST', `${V1}/generate/photo`, { images: [], resolution: '8K' });
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.detail, [{ loc: ['body', 'images'], msg: 'must NOT have fewer than 1 items', type: 'minItems' }]);
      const query = await call('GET', `${V1}/results?page=0&page_size=1000`);
      assert.equal(query.status, 422);
      assert.deepEqual(query.body.detail.map((d: { loc: unknown[] }) => d.loc), [['query', 'page'], ['query', 'page_size']]);
      for (const issue of query.body.detail) assert.deepEqual(Object.keys(issue).sort(), ['loc', 'msg', 'type']);
    });

    it('answers 422 for a path parameter of the wrong type', async () => {
      const res = await call('GET', `${V1}/status/abc`);
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.detail[0].loc, ['path', 'action_id']);
    });

    it('answers 400 invalid_request for a body that is not JSON', async () => {
      const res = await call('POST', `${V1}/generate/photo`, '{"images": [', { 'Content-Type': 'application/json' });
      assert.deepEqual([res.status, res.body.detail.error], [400, 'invalid_request']);
    });

    it('answers 404 not_found for an unknown route and 405 for a wrong method, in the error shape', async () => {
      const missing = await call('GET', `${V1}/no-such-thing`);
      assert.deepEqual([missing.status, missing.body.detail.error], [404, 'not_found']);
      const wrongMethod = await call('DELETE', `${V1}/balance`);
      assert.equal(wrongMethod.status, 405);
      assert.equal(wrongMethod.body.detail.error, 'method_not_allowed');
    });

    it('answers 422, never 500, for NUL characters, unpaired surrogates and out-of-range dates', async () => {
      const nulBody = await call('POST', `${V1}/projects`, { name: 'a\u0000b' });
      assert.deepEqual([nulBody.status, nulBody.body.detail[0].loc], [422, ['body', 'name']]);
      // "\ud800" is valid JSON but not Unicode: Postgres json refuses it (it was a 500 here), text would alter it.
      const surrogate = await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64(64, 64) }], comment: 'a\ud800b' });
      assert.deepEqual([surrogate.status, surrogate.body.detail], [422, [{ loc: ['body', 'comment'], msg: 'must not contain an unpaired UTF-16 surrogate', type: 'pattern' }]]);
      assert.equal((await call('POST', `${V1}/projects`, { name: '\udc00', comment: '😀 paired is fine' })).status, 422);
      assert.equal((await call('POST', `${V1}/projects`, { name: '😀 paired is fine' })).status, 201);
      assert.equal((await call('GET', `${V1}/results?client_group_id=%00`)).status, 422);
      assert.equal((await call('GET', `${V1}/results?created_after=0000-01-01`)).status, 422);
    });

    it('answers an unknown HTTP method in the error shape', async () => {
      const res = await call('PURGE', `${V1}/balance`);
      assert.ok([405, 501].includes(res.status), String(res.status));
      assert.ok(res.body.detail.error);
    });

    it('keeps a safe caller request id and replaces an unsafe one', async () => {
      const kept = await call('GET', `${V1}/pricing`, undefined, { 'X-Request-Id': 'trace-42' });
      assert.equal(kept.headers.get('x-request-id'), 'trace-42');
      const replaced = await call('GET', `${V1}/pricing`, undefined, { 'X-Request-Id': 'bad id with spaces' });
      assert.match(replaced.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
    });

    it('answers an unexpected failure with the bare root body, leaking nothing', async () => {
      // The same app over a data source that is not connected: every query fails inside the handler.
      const closed = createDataSource(testEnvironment().databaseUrl);
      const { apiKey } = await newAccount(stack.db);
      const app = createApp({ config: { rateLimitPerMinute: 100, taskQueue: 'unused', publicBaseUrl: 'http://x', webhookRetryInitialMs: 100, jobMaxAttempts: 3, jobRetryBackoffMs: 100 }, db: closed, temporal: stack.temporal, store: stack.store, signer: stack.signer, providers: undefined as never, outbound: undefined as never, secrets: undefined as never, bodyBytesInFlight: stack.services.bodyBytesInFlight, liveEvents: stack.services.liveEvents, linkMail: stack.services.linkMail });
      const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      try {
        const res = await apiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey)('GET', `${V1}/balance`);
        assert.equal(res.status, 500);
        assert.deepEqual(res.body, { error: 'Internal server error' });
        assert.ok(res.headers.get('x-request-id'));
      } finally {
        server.close();
      }
    });
  });

  describe('information endpoints', () => {
    let call: ReturnType<typeof apiClient>;
    before(async () => {
      call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
    });

    it('GET /balance', async () => {
      const res = await call('GET', `${V1}/balance`);
      assert.deepEqual(res.body, { balance: 20, available: 20, holds: 0 });
    });

    it('GET /pricing reads the current price list', async () => {
      const res = await call('GET', `${V1}/pricing`);
      assert.deepEqual(Object.keys(res.body).sort(), ['generation', 'improvement', 'video_10sec', 'video_5sec']);
      for (const value of Object.values(res.body)) assert.ok(Number.isInteger(value));
    });

    it('GET /categories is the fixed catalogue, cacheable for 24 hours', async () => {
      const res = await call('GET', `${V1}/categories`);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=86400');
      assert.deepEqual(res.body.categories.map((c: { id: string }) => c.id), ['apparel', 'wearables', 'food', 'cosmetics', 'gadgets', 'home', 'other']);
      assert.equal(res.body.categories.flatMap((c: { concepts: unknown[] }) => c.concepts).length, 27);
      assert.deepEqual(res.body.categories, CATEGORIES);
      assert.match(res.body.categories[0].name, /[А-Яа-я]/);
    });
  });

  describe('health', () => {
    it('GET /healthz and GET /readyz answer without a key', async () => {
      const call = apiClient(stack.baseUrl);
      assert.deepEqual((await call('GET', '/healthz')).body, { status: 'ok' });
      const ready = await call('GET', '/readyz');
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.body, { status: 'ready', checks: { database: 'ok', temporal: 'ok', storage: 'ok' } });
    });
  });
});

describe('rate limit over HTTP', () => {
  let first: Stack;
  let second: Stack;
  before(async () => {
    [first, second] = await startApiPair(4); // the limit is shared
  });
  after(async () => {
    await first.stop();
    await second.stop();
  });

  it('counts per key across API instances and answers 429 with headers and details', async () => {
    const { apiKey } = await newAccount(first.db);
    const viaFirst = apiClient(first.baseUrl, apiKey);
    const viaSecond = apiClient(second.baseUrl, apiKey);
    await clearOfRateWindowEdge(3); // the four allowed calls and the refused one must share a minute

    const ok = [await viaFirst('GET', `${V1}/pricing`), await viaSecond('GET', `${V1}/pricing`), await viaFirst('GET', `${V1}/pricing`), await viaSecond('GET', `${V1}/pricing`)];
    assert.deepEqual(ok.map((r) => r.status), [200, 200, 200, 200]);
    assert.deepEqual(ok.map((r) => r.headers.get('x-ratelimit-remaining')), ['3', '2', '1', '0']);
    assert.equal(ok[0].headers.get('x-ratelimit-limit'), '4');

    const refused = await viaFirst('GET', `${V1}/pricing`);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.detail.error, 'rate_limit_exceeded');
    assert.equal(refused.body.detail.details.limit, 4);
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    assert.equal(new Date(refused.body.detail.details.reset_at).getTime(), reset * 1000);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);

    const otherKey = apiClient(first.baseUrl, (await newAccount(first.db)).apiKey);
    assert.equal((await otherKey('GET', `${V1}/pricing`)).status, 200, 'another key has its own budget');
  });
});
