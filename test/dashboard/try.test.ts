/**
 * Try it through the dashboard's routes: a photo and a video started for one of the account's keys are accepted as
 * the public API accepts them (attributed to that key, held, rendered, charged); a key of another account or a
 * revoked one, an invalid request and a price beyond the balance are refused as the API refuses them.
 */
import assert from 'node:assert/strict';
import { actionWorkflowId } from '../../src/temporal/contract';
import { signedInUser } from '../support/dashboard-client';
import { jpegBase64 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/** The stack's per-key limit: above what each test spends of it on one key. */
const RATE_LIMIT = 4;

describe('dashboard try it', function () {
  this.timeout(90_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    [stack, image] = await Promise.all([startStack({ rateLimitPerMinute: RATE_LIMIT }), jpegBase64()]);
  });
  after(() => stack?.stop());

  it('starts a photo and a video for the chosen key, as the API accepts them, and they complete and are charged', async () => {
    const { browser } = await signedInUser(stack.baseUrl, stack.db);
    const { body: created } = await browser.call('POST', '/keys', { name: 'try key' });
    const options = (await browser.call('GET', '/try')).body;
    assert.ok(options.keys.some((k: { id: number }) => k.id === created.key.id));
    assert.ok(options.categories.some((c: { id: string }) => c.id === 'home'));

    const photo = await browser.call('POST', '/try/photo', { key_id: created.key.id, request: { images: [{ data: image }], product_name: 'Jug', category_id: 'home' } });
    assert.equal(photo.status, 200, JSON.stringify(photo.body));
    assert.deepEqual([photo.body.status, photo.body.poll_url], ['pending', `/api/v1/public/status/${photo.body.action_id}`]);
    const video = await browser.call('POST', '/try/video', { key_id: created.key.id, request: { image: { data: image }, scenario: 'a slow turn' } });
    assert.equal(video.status, 200, JSON.stringify(video.body));
    for (const id of [photo.body.action_id, video.body.action_id]) {
      await stack.temporal.workflow.getHandle(actionWorkflowId(id)).result();
      const detail = (await browser.call('GET', `/actions/${id}`)).body;
      assert.deepEqual([detail.status, detail.charged, detail.charged === detail.price], ['completed', detail.price, true]);
    }
    const [row] = await stack.db.query('SELECT p.inbox_key_id FROM actions a JOIN projects p ON p.id = a.project_id WHERE a.id = $1', [photo.body.action_id]);
    assert.equal(row.inbox_key_id, created.key.id, 'in the chosen key\'s inbox project (its grouping)');
  });

  it('refuses another account\'s key, a revoked key, an invalid request and a price beyond the balance', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db);
    const b = await signedInUser(stack.baseUrl, stack.db);
    const [bKey] = (await b.browser.call('GET', '/keys')).body.keys;
    const [aKey] = (await a.browser.call('GET', '/keys')).body.keys;
    const request = { images: [{ data: image }], product_name: 'Jug', category_id: 'home' };
    const foreign = await a.browser.call('POST', '/try/photo', { key_id: bKey.id, request });
    assert.deepEqual([foreign.status, foreign.body.detail.error], [422, 'invalid_request']);
    const invalid = await a.browser.call('POST', '/try/photo', { key_id: aKey.id, request: { product_name: 'No images' } });
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body.detail[0].loc.slice(0, 3), ['body', 'request', 'images']);
    await stack.db.query('UPDATE accounts SET balance = 1 WHERE id = $1', [a.accountId]);
    const poor = await a.browser.call('POST', '/try/photo', { key_id: aKey.id, request });
    assert.deepEqual([poor.status, poor.body.detail.error], [402, 'insufficient_tokens']);
    await a.browser.call('POST', `/keys/${aKey.id}/revoke`);
    const revoked = await a.browser.call('POST', '/try/photo', { key_id: aKey.id, request });
    assert.deepEqual([revoked.status, revoked.body.detail.error], [422, 'invalid_request']);
    assert.equal((await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [a.accountId]))[0].n, 0, 'nothing accepted');
  });

  it('counts each start as a request of the key: its rate limit (429 with the same headers) and its last use; another account\'s project is a 404', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db);
    const b = await signedInUser(stack.baseUrl, stack.db);
    const [key] = (await a.browser.call('GET', '/keys')).body.keys;
    assert.equal(key.last_used_at, null);
    const bProject = (await stack.db.query('INSERT INTO projects (account_id, source) VALUES ($1, $2) RETURNING id', [b.accountId, 'api']))[0].id;
    const request = { images: [{ data: image }], product_name: 'Jug', category_id: 'home', project_id: bProject };
    for (let i = 1; i <= RATE_LIMIT; i++) {
      const foreign = await a.browser.call('POST', '/try/photo', { key_id: key.id, request });
      assert.deepEqual([foreign.status, foreign.body.detail.error], [404, 'not_found'], 'as an unknown project: nothing said of B\'s');
      assert.equal(foreign.headers.get('x-ratelimit-remaining'), String(RATE_LIMIT - i));
    }
    const limited = await a.browser.call('POST', '/try/photo', { key_id: key.id, request });
    assert.deepEqual([limited.status, limited.body.detail.error], [429, 'rate_limit_exceeded']);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.ok((await a.browser.call('GET', '/keys')).body.keys[0].last_used_at, 'its last use shows');
  });
});
