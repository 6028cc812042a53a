import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { createProviders } from '../../src/providers';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('providers selected without their keys', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    const providers = createProviders(loadConfig({ imageProvider: 'gemini', textProvider: 'gemini', videoProvider: 'runway', geminiApiKey: undefined, localRendererDelayMs: 0 }));
    assert.equal(providers.unavailable.image, 'GEMINI_API_KEY is not set');
    assert.equal(providers.unavailable.text, 'GEMINI_API_KEY is not set');
    stack = await startStack({ providers });
  });
  after(() => stack.stop());

  it('the service runs, and generation answers 503 generation_unavailable before anything is held', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 50);
    const call = apiClient(stack.baseUrl, apiKey);
    const image = await jpegBase64();
    const requests: [string, object][] = [
      [`${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Mug', category_id: 'home' }],
      [`${V1}/generate/photo`, { images: [{ data: image }] }],
      [`${V1}/generate/card`, { images: [{ data: image }], product_name: 'Mug', category_id: 'home', user_text: 'Warm' }],
      [`${V1}/generate/video`, { image: { data: image } }],
      ['/api/v2/jobs/generate', { images: [{ data: image }], product_name: 'Mug', category_id: 'home' }],
    ];
    for (const [path, body] of requests) {
      const res = await call('POST', path, body);
      assert.deepEqual([res.status, res.body.detail?.error], [503, 'generation_unavailable'], `${path}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.detail.message, /not configured/);
    }
    const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(n, 0, 'nothing was created or held');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });
});
