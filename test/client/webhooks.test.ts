import assert from 'node:assert/strict';
import { ApiError, createClient, DEFAULT_RETRY, verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src';
import { retryDelay } from '../../clients/typescript/src/retry';
import { newWebhookSecret, signature, standardWebhookHeaders } from '../../src/webhooks/events';
import { eventually, jpegBase64, newAccount } from '../support/fixtures';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { Stack, startStack } from '../support/stack';

describe('typed client: webhooks and retry timing', function () {
  this.timeout(90_000);

  describe('verifyWebhook', () => {
    const secret = newWebhookSecret();
    const body = '{"action_id":7,"project_id":3,"card_id":7,"type":"generate"}';
    const id = 'b5a0c5f4-0000-4000-8000-000000000001';
    const signedAt = (seconds: number, rawBody = body) => ({
      'x-service-signature': signature(secret, rawBody), 'x-service-event': 'generation.completed', 'x-service-job-id': id,
      ...standardWebhookHeaders(id, seconds, rawBody, secret),
    });
    const now = () => Math.floor(Date.now() / 1000);
    const refused = (input: Parameters<typeof verifyWebhook>[0], message: RegExp) => assert.rejects(verifyWebhook(input),
      (err: Error) => err instanceof WebhookVerificationError && message.test(err.message));

    it('answers the event, the signed delivery id and time, and the payload (string, bytes, Headers)', async () => {
      const seconds = now();
      const headers = signedAt(seconds);
      const verified = await verifyWebhook({ rawBody: body, headers, secret });
      assert.deepEqual(verified, { event: 'generation.completed', deliveryId: id, sentAt: new Date(seconds * 1000), payload: JSON.parse(body) });
      assert.equal((await verifyWebhook({ rawBody: Buffer.from(body), headers: new Headers(headers), secret })).payload.action_id, 7);
    });

    it('refuses another secret, a changed body, a missing or malformed body signature', async () => {
      const headers = signedAt(now());
      await refused({ rawBody: body, headers, secret: newWebhookSecret() }, /does not match/);
      await refused({ rawBody: body.replace('7', '8'), headers, secret }, /does not match/);
      await refused({ rawBody: body, headers: { ...headers, 'x-service-signature': undefined }, secret }, /no X-Service-Signature/);
      await refused({ rawBody: body, headers: { ...headers, 'x-service-signature': 'sha1=abc' }, secret }, /not sha256=/);
    });

    it('refuses a replay: an old timestamp, another delivery id, a forged or stripped webhook-signature', async () => {
      await refused({ rawBody: body, headers: signedAt(now() - 600), secret }, /from this clock/);
      const headers = signedAt(now());
      await refused({ rawBody: body, headers: { ...headers, 'x-service-job-id': 'another' }, secret }, /differ/);
      await refused({ rawBody: body, headers: { ...headers, 'webhook-id': 'another', 'x-service-job-id': 'another' }, secret }, /webhook-signature does not match/);
      await refused({ rawBody: body, headers: { ...headers, 'webhook-timestamp': String(now() - 1) }, secret }, /webhook-signature does not match/);
      await refused({ rawBody: body, headers: { ...headers, 'webhook-signature': undefined }, secret }, /no webhook-signature/);
      // Stripped on purpose, by a receiver that takes the body signature alone.
      const unstamped = await verifyWebhook({ rawBody: body, headers: { ...headers, 'webhook-signature': undefined }, secret, allowUnstamped: true });
      assert.deepEqual([unstamped.deliveryId, unstamped.sentAt], [id, null]);
    });

    it('refuses a parsed body with a message that says to keep the raw one, and a body serialised again', async () => {
      const headers = signedAt(now());
      await assert.rejects(verifyWebhook({ rawBody: JSON.parse(body), headers, secret }), (err: Error) => err instanceof TypeError && /parsed into an object/.test(err.message));
      await assert.rejects(verifyWebhook({ rawBody: JSON.stringify(JSON.parse(body), null, 2), headers, secret }), /not parsed and serialised again/);
    });
  });

  it('verifies a real delivery as the receiver gets it (Node\'s raw body and headers)', async () => {
    const stack: Stack = await startStack({ webhookRetryInitialMs: 100 });
    const receiver: TestHttpsServer = await startHttpsServer((_req, res) => {
      res.writeHead(200).end();
    });
    try {
      const created = await newAccount(stack.db, 100);
      const client = createClient({ baseUrl: stack.baseUrl, apiKey: created.apiKey });
      const webhook = await client.post('/api/v1/public/webhooks', { body: { url: `${receiver.url}/client-hook` } });
      const { action_id } = await client.post('/api/v1/public/generate/photo', { body: { images: [{ data: await jpegBase64() }] } });
      await eventually(async () => receiver.requests.length, (n) => n >= 1);
      const [delivery] = receiver.requests;
      const verified = await verifyWebhook({ rawBody: delivery.body, headers: delivery.headers, secret: webhook.secret! });
      assert.equal(verified.payload.action_id, action_id);
      assert.equal(verified.event, 'generation.completed');
      assert.equal(verified.deliveryId, delivery.headers['x-service-job-id']);
    } finally {
      await receiver.close();
      await stack.stop();
    }
  });

  describe('retry timing', () => {
    const answer = (headers: Record<string, string>) => new Response(null, { status: 429, headers });
    const policy = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 10_000 };
    const now = Date.parse('2026-11-28T12:00:00Z');

    it('waits what Retry-After (seconds or a date) or X-RateLimit-Reset asks, plus at most the base as jitter', () => {
      assert.equal(retryDelay(0, answer({ 'Retry-After': '3' }), policy, now, () => 0), 3000);
      assert.equal(retryDelay(0, answer({ 'Retry-After': '3' }), policy, now, () => 0.999), 3000 + 99.9);
      assert.equal(retryDelay(0, answer({ 'Retry-After': new Date(now + 5000).toUTCString() }), policy, now, () => 0), 5000);
      assert.equal(retryDelay(0, answer({ 'X-RateLimit-Reset': String(now / 1000 + 2) }), policy, now, () => 0), 2000);
    });

    it('backs off with full jitter when nothing is asked, and gives up on a wait longer than maxDelayMs', () => {
      assert.equal(retryDelay(3, undefined, policy, now, () => 0.5), 0.5 * 100 * 8);
      assert.equal(retryDelay(20, undefined, policy, now, () => 1), 10_000, 'capped');
      assert.equal(retryDelay(0, answer({ 'Retry-After': '60' }), policy, now, () => 0), undefined);
    });

    it('sends a 503 again only where nothing can be done twice: GET, or an operation with its Idempotency-Key', async () => {
      const sent: { method: string; path: string; key: string | null }[] = [];
      const client = createClient({
        baseUrl: 'http://127.0.0.1:9/base+(path)', apiKey: 'ak_x', retry: { retries: 2, baseDelayMs: 1 },
        fetch: async (input, init) => {
          const request = new Request(input, init);
          sent.push({ method: request.method, path: new URL(request.url).pathname, key: request.headers.get('idempotency-key') });
          return new Response('{"detail":{"error":"generation_unavailable","message":"later"}}', { status: 503, headers: { 'Retry-After': '0' } });
        },
      });
      const unavailable = (call: Promise<unknown>) => assert.rejects(call, (err: unknown) => err instanceof ApiError && err.code === 'generation_unavailable');
      await unavailable(client.post('/api/v1/public/projects', { body: { name: 'once' } }));
      assert.equal(sent.length, 1, 'a project is not made twice');
      await unavailable(client.post('/api/v1/public/generate/photo', { body: { images: [{ data: 'x' }] } }));
      const generates = sent.filter((r) => r.path.endsWith('/generate/photo'));
      assert.equal(generates.length, 3);
      assert.ok(generates[0].key && generates.every((r) => r.key === generates[0].key), 'one key, on each try (and a base path with regex characters)');
      await unavailable(client.get('/api/v1/public/balance'));
      assert.equal(sent.filter((r) => r.path.endsWith('/balance')).length, 3);
    });

    it('refuses an API key a header cannot carry, a shared Idempotency-Key, and ids that are not ids', async () => {
      assert.throws(() => createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'ak_x\r\nX-Evil: 1' }), /characters an HTTP header cannot carry/);
      assert.throws(() => createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'ak_x', headers: { 'idempotency-key': 'k' } }), /made per call/);
      const client = createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'ak_x' });
      await assert.rejects(client.wait(1.5), /positive integer/);
      await assert.rejects(client.wait('../events'), /UUID/);
    });

    it('returns the 429 as an ApiError once its retries are spent', async () => {
      let calls = 0;
      const client = createClient({
        baseUrl: 'http://127.0.0.1:9', apiKey: 'ak_x', retry: { retries: 2, baseDelayMs: 1 },
        fetch: async () => {
          calls++;
          return new Response(JSON.stringify({ detail: { error: 'rate_limit_exceeded', message: 'slow down', details: { limit: 1 } } }),
            { status: 429, headers: { 'Retry-After': '0', 'X-Request-Id': 'req-1', 'Content-Type': 'application/json' } });
        },
      });
      const err = await client.get('/api/v1/public/balance').catch((e: unknown) => e);
      assert.ok(err instanceof ApiError);
      assert.deepEqual([err.status, err.code, err.details, err.requestId, calls], [429, 'rate_limit_exceeded', { limit: 1 }, 'req-1', 3]);
    });
  });
});
