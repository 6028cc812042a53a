import assert from 'node:assert/strict';
import sharp from 'sharp';
import { MAX_IMAGE_BYTES } from '../../src/generation/images';
import { actionWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('POST /generate/photo and GET /status over HTTP', function () {
  this.timeout(60_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack();
    image = await jpegBase64(400, 500, '#d03030');
  });
  after(() => stack.stop());

  it('goes from pending to completed, the image downloads, and the hold becomes a charge', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const created = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], locale: 'en' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const { action_id: actionId } = created.body;
    assert.equal(created.body.status, 'pending');
    assert.equal(created.body.poll_url, `${V1}/status/${actionId}`);
    assert.ok(Number.isInteger(created.body.project_id) && Number.isInteger(created.body.card_id));
    assert.deepEqual(created.body.detected, { category_id: 'other', concept_id: 'other_in_use', product_name: 'Red product' });

    // Held at acceptance: 5 of 20 held while pending, or already charged if the render was that quick.
    const held = (await call('GET', `${V1}/balance`)).body;
    assert.ok([[20, 5], [15, 0]].some(([balance, holds]) => held.balance === balance && held.holds === holds), JSON.stringify(held));
    const [hold] = await stack.db.query('SELECT amount, status FROM spark_holds WHERE action_id = $1', [actionId]);
    assert.equal(hold.amount, 5);
    assert.ok(['held', 'charged'].includes(hold.status), hold.status);

    await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
    const status = await call('GET', created.body.poll_url);
    assert.equal(status.status, 200);
    assert.equal(status.body.status, 'completed');
    assert.equal(status.body.type, 'generate');
    assert.equal(status.body.error_message, null);
    assert.ok(status.body.completed_at);
    const expires = new Date(status.body.result_url_expires_at).getTime();
    assert.ok(Math.abs(expires - (Date.now() + 30 * 24 * 3600 * 1000)) < 60_000, 'valid 30 days');

    const download = await fetch(status.body.result_url);
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-type'), 'image/jpeg');
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    assert.deepEqual([meta.width, meta.height], [1536, 2048], '2K at 3:4');

    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('refuses tampered or extended signed URLs', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const created = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Mug', category_id: 'home', concept_id: 'home_details' });
    assert.equal(created.body.detected, null, 'nothing detected when category, concept and name are given');
    await stack.temporal.workflow.getHandle(actionWorkflowId(created.body.action_id)).result();
    const url = new URL((await call('GET', created.body.poll_url)).body.result_url);
    const extended = new URL(url);
    extended.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    const forged = new URL(url);
    forged.pathname = '/assets/results/1.jpg';
    for (const bad of [extended, forged]) {
      const res = await fetch(bad);
      assert.equal(res.status, 403);
      assert.equal(((await res.json()) as any).detail.error, 'forbidden');
    }
    const expired = stack.signer.url(url.pathname.slice('/assets/'.length), -10).url;
    assert.equal((await fetch(expired)).status, 403);
  });

  it('applies defaults, 4K pricing and the Accept-Language locale', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const created = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], resolution: '4K', category_id: 'food' }, { 'Accept-Language': 'es-ES,es;q=0.9,en;q=0.5' });
    assert.equal(created.status, 200);
    assert.deepEqual(created.body.detected, { category_id: 'food', concept_id: 'food_catalog', product_name: 'Producto rojo' });
    const [action] = await stack.db.query('SELECT price, params FROM actions WHERE id = $1', [created.body.action_id]);
    assert.equal(action.price, 7, 'generation 5 + 2 for 4K');
    assert.equal(action.params.locale, 'es');
    assert.equal(action.params.aspectRatio, '3:4');
    assert.equal(action.params.photoStyle, 'classic');
    await stack.temporal.workflow.getHandle(actionWorkflowId(created.body.action_id)).result();
    assert.equal((await call('GET', `${V1}/balance`)).body.balance, 13);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('402 insufficient_tokens with details, and nothing recorded or held', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 4);
    const call = apiClient(stack.baseUrl, apiKey);
    const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] });
    assert.equal(res.status, 402);
    assert.deepEqual(res.body.detail.error, 'insufficient_tokens');
    assert.deepEqual(res.body.detail.details, { available: 4, required: 5 });
    const [{ count }] = await stack.db.query('SELECT count(*)::int AS count FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(count, 0);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 4, available: 4, holds: 0 });
  });

  it('concurrent requests never hold more than the balance', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 12);
    const call = apiClient(stack.baseUrl, apiKey);
    const answers = await Promise.all(Array.from({ length: 6 }, () => call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home' })));
    const accepted = answers.filter((r) => r.status === 200);
    assert.equal(accepted.length, 2);
    assert.ok(answers.filter((r) => r.status !== 200).every((r) => r.status === 402));
    await Promise.all(accepted.map((r) => stack.temporal.workflow.getHandle(actionWorkflowId(r.body.action_id)).result()));
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 2, available: 2, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a hold the balance does not cover at commit is 402 with its details, and its whole transaction is undone', async () => {
    // Six at once, each with its own Idempotency-Key: those that pass the balance read with their key are refused by
    // the commit-time check; either way four of six are 402, with nothing of theirs kept (no action, no key).
    const { accountId, apiKey } = await newAccount(stack.db, 10);
    const call = apiClient(stack.baseUrl, apiKey);
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => call('POST', `${V1}/generate/photo`,
      { images: [{ data: image }], product_name: 'Cup', category_id: 'home' }, { 'Idempotency-Key': `commit-check-${accountId}-${i}` })));
    const accepted = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 402);
    assert.deepEqual([accepted.length, refused.length], [2, 4]);
    for (const r of refused) {
      assert.equal(r.body.detail.error, 'insufficient_tokens');
      assert.equal(r.body.detail.details.required, 5);
    }
    const [{ actions }] = await stack.db.query('SELECT count(*)::int AS actions FROM actions WHERE account_id = $1', [accountId]);
    const [{ keys }] = await stack.db.query('SELECT count(*)::int AS keys FROM idempotency_keys WHERE account_id = $1', [accountId]);
    assert.deepEqual([actions, keys], [2, 2]);
    await Promise.all(accepted.map((r) => stack.temporal.workflow.getHandle(actionWorkflowId(r.body.action_id)).result()));
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 0, available: 0, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('refuses bad images: 413 over 15 MB, 400 for undecodable or non-image data', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const huge = Buffer.alloc(MAX_IMAGE_BYTES + 1, 1).toString('base64');
    const tooLarge = await call('POST', `${V1}/generate/photo`, { images: [{ data: huge }] });
    assert.deepEqual([tooLarge.status, tooLarge.body.detail.error], [413, 'image_too_large']);
    const notBase64 = await call('POST', `${V1}/generate/photo`, { images: [{ data: '%%%not base64%%%' }] });
    assert.deepEqual([notBase64.status, notBase64.body.detail.error], [400, 'invalid_request']);
    const notImage = await call('POST', `${V1}/generate/photo`, { images: [{ data: Buffer.from('hello world, not an image').toString('base64') }] });
    assert.deepEqual([notImage.status, notImage.body.detail.error], [400, 'invalid_request']);
    const truncated = Buffer.from(image, 'base64').subarray(0, 200).toString('base64');
    const broken = await call('POST', `${V1}/generate/photo`, { images: [{ data: truncated, media_type: 'image/png' }] });
    assert.deepEqual([broken.status, broken.body.detail.error], [400, 'invalid_request']);
    const both = await call('POST', `${V1}/generate/photo`, { images: [{ data: image, url: 'https://example.com/a.jpg' }] });
    assert.equal(both.status, 422, 'exactly one of url and data');
  });

  it('groups by project: own project, inbox per key, 403 and 404 for others', async () => {
    const owner = await newAccount(stack.db, 50);
    const stranger = await newAccount(stack.db, 50);
    const call = apiClient(stack.baseUrl, owner.apiKey);
    const body = { images: [{ data: image }], product_name: 'Lamp', category_id: 'home' };
    const first = await call('POST', `${V1}/generate/photo`, body);
    const second = await call('POST', `${V1}/generate/photo`, body);
    assert.equal(first.body.project_id, second.body.project_id, 'one inbox project per key');
    assert.notEqual(first.body.card_id, second.body.card_id, 'a card per generation');
    const [inbox] = await stack.db.query('SELECT source, name FROM projects WHERE id = $1', [first.body.project_id]);
    assert.deepEqual([inbox.source, inbox.name], ['api_inbox', 'default']);

    const explicit = await call('POST', `${V1}/generate/photo`, { ...body, project_id: first.body.project_id });
    assert.equal(explicit.body.project_id, first.body.project_id);
    const foreign = await apiClient(stack.baseUrl, stranger.apiKey)('POST', `${V1}/generate/photo`, { ...body, project_id: first.body.project_id });
    assert.deepEqual([foreign.status, foreign.body.detail.error], [403, 'forbidden']);
    const missing = await call('POST', `${V1}/generate/photo`, { ...body, project_id: 999999 });
    assert.deepEqual([missing.status, missing.body.detail.error], [404, 'not_found']);

    const status = await apiClient(stack.baseUrl, stranger.apiKey)('GET', `${V1}/status/${first.body.action_id}`);
    assert.deepEqual([status.status, status.body.detail.error], [403, 'forbidden']);
    const unknown = await call('GET', `${V1}/status/99999999`);
    assert.deepEqual([unknown.status, unknown.body.detail.error], [404, 'not_found']);
    await eventually(async () => (await call('GET', `${V1}/balance`)).body.holds, (holds) => holds === 0);
    await assertMoneyConsistent(stack.db, owner.accountId);
  });

  it('a legacy_per_request key makes a new project per request', async () => {
    const { accountId } = await newAccount(stack.db, 50);
    const { createKey } = await import('../../src/accounts/accounts');
    const legacy = await createKey(stack.db, accountId, 'old integration', 'legacy_per_request');
    const call = apiClient(stack.baseUrl, legacy.apiKey);
    const body = { images: [{ data: image }], product_name: 'Vase', category_id: 'home' };
    const a = await call('POST', `${V1}/generate/photo`, body);
    const b = await call('POST', `${V1}/generate/photo`, body);
    assert.notEqual(a.body.project_id, b.body.project_id);
    const [project] = await stack.db.query('SELECT source, product_name FROM projects WHERE id = $1', [a.body.project_id]);
    assert.deepEqual([project.source, project.product_name], ['api', 'Vase']);
  });
});

describe('Idempotency-Key on POST /generate/photo', function () {
  this.timeout(60_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack();
    image = await jpegBase64(300, 300, '#30a030');
  });
  after(() => stack.stop());

  const body = () => ({ images: [{ data: image }], product_name: 'Jar', category_id: 'food', concept_id: 'food_catalog' });

  it('a repeat returns the first response and charges once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const first = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'order-42:photo.1' });
    const second = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'order-42:photo.1' });
    assert.equal(first.status, 200);
    assert.deepEqual([second.status, second.body], [200, first.body]);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    await stack.temporal.workflow.getHandle(actionWorkflowId(first.body.action_id)).result();
    const [{ count }] = await stack.db.query('SELECT count(*)::int AS count FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(count, 1);
    assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('concurrent duplicates create one action and all get the same answer', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const answers = await Promise.all(Array.from({ length: 6 }, () => call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'burst' })));
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
    assert.equal(new Set(answers.map((a) => a.body.action_id)).size, 1);
    await stack.temporal.workflow.getHandle(actionWorkflowId(answers[0].body.action_id)).result();
    const [{ count }] = await stack.db.query('SELECT count(*)::int AS count FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(count, 1);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a repeat with a different body is refused with 409 idempotency_conflict; other keys and accounts are independent', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const first = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'k1' });
    const changed = await call('POST', `${V1}/generate/photo`, { ...body(), product_name: 'Other' }, { 'Idempotency-Key': 'k1' });
    assert.deepEqual([changed.status, changed.body.detail.error], [409, 'idempotency_conflict']);
    const otherKey = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'k2' });
    assert.notEqual(otherKey.body.action_id, first.body.action_id);
    const otherAccount = await apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey)('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'k1' });
    assert.notEqual(otherAccount.body.action_id, first.body.action_id);
  });

  it('after the 5-minute window the same key makes a new action', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const first = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'old' });
    await stack.db.query(`UPDATE idempotency_keys SET created_at = now() - interval '301 seconds' WHERE account_id = $1`, [accountId]);
    const later = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'old' });
    assert.equal(later.status, 200);
    assert.notEqual(later.body.action_id, first.body.action_id);
  });

  it('a refused request (402) does not burn the key', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 0);
    const call = apiClient(stack.baseUrl, apiKey);
    assert.equal((await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'retry-me' })).status, 402);
    const { grantToAccount } = await import('../../src/accounts/accounts');
    await grantToAccount(stack.db, accountId, 5);
    assert.equal((await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'retry-me' })).status, 200);
  });

  it('422 for a key with bad characters or over 128 characters', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
    for (const key of ['has space', 'ключ', 'x'.repeat(129), 'a/b']) {
      const res = await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': encodeURI(key) === key ? key : Buffer.from(key).toString('latin1') });
      assert.equal(res.status, 422, key);
      assert.deepEqual(res.body.detail[0].loc, ['header', 'Idempotency-Key']);
    }
    assert.equal((await call('POST', `${V1}/generate/photo`, body(), { 'Idempotency-Key': 'x'.repeat(128) })).status, 200);
  });
});

describe('when Temporal cannot be reached', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false });
  });
  after(() => stack.stop());

  it('answers 503 generation_unavailable, fails the action and releases the hold', async () => {
    const { createApp } = await import('../../api/app');
    const { connectClient } = await import('../../src/temporal/client');
    const { OutboundPolicy } = await import('../../src/net/outbound');
    const http = await import('node:http');
    const { testEnvironment } = await import('../support/environment');
    const unreachable = await connectClient(testEnvironment().temporalAddress, 'default');
    await unreachable.connection.close();
    const app = createApp({
      config: { rateLimitPerMinute: 100, taskQueue: stack.taskQueue, publicBaseUrl: stack.baseUrl, webhookRetryInitialMs: 100, jobMaxAttempts: 3, jobRetryBackoffMs: 100 },
      db: stack.db, temporal: unreachable, store: stack.store, signer: stack.signer, providers: stack.deps.providers,
      outbound: new OutboundPolicy(), secrets: stack.deps.secrets, bodyBytesInFlight: stack.services.bodyBytesInFlight, liveEvents: stack.services.liveEvents, linkMail: stack.services.linkMail,
    });
    const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(`http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`, apiKey);
      const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] });
      assert.deepEqual([res.status, res.body.detail.error], [503, 'generation_unavailable']);
      const [action] = await stack.db.query('SELECT status, error_message FROM actions WHERE account_id = $1', [accountId]);
      assert.deepEqual([action.status, action.error_message], ['failed', 'Generation was unavailable']);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);

      const keyed = { images: [{ data: await jpegBase64() }] };
      const first = await call('POST', `${V1}/generate/photo`, keyed, { 'Idempotency-Key': 'after-503' });
      const repeat = await call('POST', `${V1}/generate/photo`, keyed, { 'Idempotency-Key': 'after-503' });
      assert.deepEqual([first.status, repeat.status], [503, 503], 'a refused request does not leave a stored 200 behind');
    } finally {
      server.close();
    }
  });
});
