import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ProviderError } from '../../src/providers/provider';
import { actionWorkflowId, deliveryWorkflowId } from '../../src/temporal/contract';
import { apiClient, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { INTERNAL_URLS } from '../support/internal-urls';
import { ScriptedProvider } from '../support/providers';
import { ALLOW_CIDRS, ALLOWED_ADDRESS, REFUSED_ADDRESS, RebindingStage, startRebindingStage } from '../support/rebinding';
import { Stack, startStack, TEST_SECRETS } from '../support/stack';
import { newWebhookSecret } from '../../src/webhooks/events';
import { registry } from '../../src/metrics/registry';
import { parseMetrics, valueOf } from '../support/prometheus';

/** The receiver's side of the contract: verify the signature of the raw body in constant time. */
function verifies(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('webhooks', function () {
  this.timeout(90_000);
  let stack: Stack;
  let receiver: TestHttpsServer;
  let image: string;
  /** Answers per path: the listed statuses in turn, the last one repeating. */
  const scripts = new Map<string, number[]>();
  /**
   * Paths whose receiver verifies each attempt as a Standard Webhooks receiver does, with the `standardwebhooks`
   * library and the secret given here: 401 (refused for good) when it throws, the path's script otherwise.
   */
  const standardReceivers = new Map<string, string>();
  /** Why the library refused an attempt, by path. */
  const refusedBy = new Map<string, string>();

  before(async () => {
    stack = await startStack({ webhookRetryInitialMs: 100 });
    image = await jpegBase64();
    receiver = await startHttpsServer((req, res, body) => {
      const secret = standardReceivers.get(req.url!);
      if (secret !== undefined) {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
        } catch (err) {
          refusedBy.set(req.url!, (err as Error).message);
          return void res.writeHead(401).end();
        }
      }
      const script = scripts.get(req.url!) ?? [200];
      const status = script.length > 1 ? script.shift()! : script[0];
      res.writeHead(status, { 'Content-Type': 'text/plain', ...(status === 503 && req.url!.startsWith('/later') ? { 'Retry-After': '2' } : {}) }).end('ok');
    });
  });
  after(async () => {
    await receiver.close();
    await stack.stop();
  });

  const received = (path: string) => receiver.requests.filter((r) => r.path === path);
  let pathCounter = 0;
  const uniquePath = (name: string) => `/${name}-${++pathCounter}`;

  async function account() {
    const created = await newAccount(stack.db, 100);
    return { ...created, call: apiClient(stack.baseUrl, created.apiKey) };
  }
  async function register(call: ReturnType<typeof apiClient>, path: string, events?: string[]) {
    const res = await call('POST', `${V1}/webhooks`, { url: `${receiver.url}${path}`, ...(events ? { events } : {}) });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }
  async function generate(call: ReturnType<typeof apiClient>, extra: Record<string, unknown> = {}) {
    const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K', ...extra });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result();
    return res.body;
  }
  /** Asserts the delivery at `path` was delivered, saying why the Standard Webhooks receiver refused it if it did. */
  function assertDelivered(path: string, outcome: unknown) {
    assert.deepEqual(outcome, { status: 'delivered' }, `refused by the standardwebhooks verifier: ${refusedBy.get(path)}`);
  }
  /** Waits for the first attempt at `path`, then for its delivery workflow to finish. */
  async function deliveryAt(path: string) {
    await eventually(async () => received(path).length, (n) => n >= 1);
    const jobId = received(path)[0].headers['x-service-job-id'] as string;
    const outcome = await stack.temporal.workflow.getHandle(deliveryWorkflowId(jobId)).result();
    return { jobId, outcome, requests: received(path) };
  }

  describe('registration', () => {
    it('creates with a whsec_ secret shown once, lists without it, deletes', async () => {
      const { call } = await account();
      const created = await register(call, '/reg');
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{32}$/, '24 random bytes in standard base64');
      for (const secret of [created.secret, ...Array.from({ length: 200 }, newWebhookSecret)]) {
        assert.doesNotThrow(() => new Webhook(secret), `the standardwebhooks library takes ${secret} as it is`);
      }
      assert.deepEqual(created.events.length, 8, 'all events by default');
      assert.equal(created.item_events, false, 'batch items\' events only when asked');
      assert.equal(created.is_active, true);
      const list = (await call('GET', `${V1}/webhooks`)).body.webhooks;
      assert.equal(list.length, 1);
      assert.equal(list[0].secret, undefined);
      assert.ok(list[0].updated_at);
      const [stored] = await stack.db.query('SELECT sealed_secret FROM webhooks WHERE id = $1', [created.id]);
      assert.ok(!stored.sealed_secret.includes(created.secret.slice(6)), 'the secret is stored sealed');
      assert.deepEqual((await call('DELETE', `${V1}/webhooks/${created.id}`)).body, { deleted: true });
      assert.deepEqual((await call('GET', `${V1}/webhooks`)).body.webhooks, []);
      assert.equal((await call('DELETE', `${V1}/webhooks/${created.id}`)).status, 404);
    });

    it('refuses each rule with 422 and a message naming it', async () => {
      const strict = await startStack({ withWorker: false, outboundAllowCidrs: [] });
      try {
        const call = apiClient(strict.baseUrl, (await newAccount(strict.db)).apiKey);
        const cases: [unknown, RegExp][] = [
          [{ url: 'http://example.com/hook' }, /HTTPS/],
          [{ url: 'https://10.1.2.3/hook' }, /private or local/],
          [{ url: 'https://127.0.0.1/hook' }, /private or local/],
          [{ url: `${receiver.url}/hook` }, /private or local/],
          [{ url: 'https://no-such-host.invalid/hook' }, /does not resolve/],
          [{ url: `https://example.com/${'x'.repeat(2000)}` }, /2000/],
          [{ url: 'https://example.com/hook', events: ['generation.completed', 'order.shipped'] }, /order\.shipped/],
        ];
        for (const [body, message] of cases) {
          const res = await call('POST', `${V1}/webhooks`, body);
          assert.equal(res.status, 422, JSON.stringify(body).slice(0, 80));
          assert.match(res.body.detail[0].msg, message);
        }
      } finally {
        await strict.stop();
      }
    });

    it('refuses every internal address form, as a registered URL and as an ad-hoc webhook_url: 422', async () => {
      const strict = await startStack({ withWorker: false, outboundAllowCidrs: [] });
      try {
        const call = apiClient(strict.baseUrl, (await newAccount(strict.db, 50)).apiKey);
        for (const url of [...INTERNAL_URLS, `https://localhost:${new URL(receiver.url).port}/hook`]) {
          const registered = await call('POST', `${V1}/webhooks`, { url });
          assert.deepEqual([registered.status, registered.body.detail?.[0]?.msg], [422, 'The URL points to a private or local address'], url);
          const adHoc = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', webhook_url: url });
          assert.equal(adHoc.status, 422, url);
          assert.deepEqual(adHoc.body.detail[0], { loc: ['body', 'webhook_url'], msg: 'The URL points to a private or local address', type: 'url' }, url);
        }
        assert.deepEqual((await call('GET', `${V1}/webhooks`)).body.webhooks, []);
      } finally {
        await strict.stop();
      }
    });

    it('allows 5 webhooks per account', async () => {
      const { call } = await account();
      for (let i = 0; i < 5; i++) await register(call, `/five-${i}`);
      const sixth = await call('POST', `${V1}/webhooks`, { url: `${receiver.url}/six` });
      assert.equal(sixth.status, 422);
      assert.match(sixth.body.detail[0].msg, /5 webhooks/);
    });

    it('403 for another account\'s webhook', async () => {
      const owner = await account();
      const stranger = await account();
      const hook = await register(owner.call, '/mine');
      assert.equal((await stranger.call('DELETE', `${V1}/webhooks/${hook.id}`)).status, 403);
      assert.equal((await stranger.call('GET', `${V1}/webhooks/${hook.id}/deliveries`)).status, 403);
    });
  });

  describe('delivery', () => {
    it('signs registered deliveries, for the contract and for Standard Webhooks; headers and body as the contract says', async () => {
      const { call } = await account();
      const path = uniquePath('signed');
      const hook = await register(call, path, ['generation.completed']);
      standardReceivers.set(path, hook.secret);
      const action = await generate(call, { client_group_id: 'batch-7' });
      const { jobId, outcome, requests } = await deliveryAt(path);
      assertDelivered(path, outcome);
      assert.equal(requests.length, 1);
      const [request] = requests;
      assert.ok(verifies(hook.secret, request.body, request.headers['x-service-signature'] as string), 'signature verifies');
      assert.ok(!verifies('whsec_wrong', request.body, request.headers['x-service-signature'] as string));
      const headers = request.headers as Record<string, string>;
      assert.equal(headers['webhook-id'], jobId);
      assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
      assert.deepEqual(new Webhook(hook.secret).verify(request.body, headers), JSON.parse(request.body.toString()), 'the library answers the payload');
      assert.throws(() => new Webhook(newWebhookSecret()).verify(request.body, headers), /No matching signature/, 'another secret');
      assert.throws(() => new Webhook(hook.secret).verify(request.body.toString().replace('batch-7', 'batch-8'), headers), /No matching signature/,
        'another body');
      assert.throws(() => new Webhook(hook.secret).verify(request.body, { ...headers, 'webhook-id': randomUUID() }), /No matching signature/,
        'another id');
      assert.equal(request.headers['content-type'], 'application/json');
      assert.equal(request.headers['x-service-event'], 'generation.completed');
      assert.match(jobId, /^[0-9a-f-]{36}$/);
      assert.deepEqual(JSON.parse(request.body.toString()), {
        action_id: action.action_id, project_id: action.project_id, card_id: action.card_id, type: 'generate', client_group_id: 'batch-7', livemode: true,
      });
    });

    it('500 four times then 200: five attempts, one success, the same X-Service-Job-Id on each', async () => {
      const { call } = await account();
      const path = uniquePath('flaky');
      scripts.set(path, [500, 500, 500, 500, 200]);
      const hook = await register(call, path);
      standardReceivers.set(path, hook.secret);
      const before = parseMetrics(await registry.metrics());
      await generate(call);
      const { jobId, outcome, requests } = await deliveryAt(path);
      assertDelivered(path, outcome);
      const after = parseMetrics(await registry.metrics());
      const moved = (name: string, outcome: string) => valueOf(after, name, { outcome }) - valueOf(before, name, { outcome });
      assert.deepEqual([moved('imagery_webhook_delivery_attempts_total', 'http_error'), moved('imagery_webhook_delivery_attempts_total', 'delivered'),
        moved('imagery_webhook_deliveries_total', 'delivered'), moved('imagery_webhook_deliveries_total', 'exhausted')], [4, 1, 1, 0]);
      assert.equal(requests.length, 5);
      assert.deepEqual(new Set(requests.map((r) => r.headers['x-service-job-id'])), new Set([jobId]));
      assert.deepEqual(new Set(requests.map((r) => r.headers['webhook-id'])), new Set([jobId]), 'one Standard Webhooks message id');
      const [delivery] = (await call('GET', `${V1}/webhooks/${hook.id}/deliveries`)).body.deliveries;
      assert.deepEqual([delivery.delivery_id, delivery.status, delivery.attempts, delivery.max_attempts, delivery.last_status_code, delivery.last_error],
        [jobId, 'succeeded', 5, 5, 200, null]);
    });

    it('a 400 answer is not retried; 5 failures end the delivery as failed', async () => {
      const { call } = await account();
      const refused = uniquePath('refused');
      const down = uniquePath('down');
      scripts.set(refused, [400]);
      scripts.set(down, [503]);
      await register(call, refused);
      const downHook = await register(call, down);
      const before = parseMetrics(await registry.metrics());
      await generate(call);
      const first = await deliveryAt(refused);
      assert.equal(first.outcome.status, 'failed');
      assert.equal(first.requests.length, 1);
      const second = await deliveryAt(down);
      assert.equal(second.requests.length, 5);
      const [delivery] = (await call('GET', `${V1}/webhooks/${downHook.id}/deliveries`)).body.deliveries;
      assert.deepEqual([delivery.status, delivery.attempts, delivery.last_status_code, delivery.last_error], ['failed', 5, 503, 'HTTP 503']);
      const after = parseMetrics(await registry.metrics());
      const moved = (name: string, outcome: string) => valueOf(after, name, { outcome }) - valueOf(before, name, { outcome });
      assert.deepEqual([moved('imagery_webhook_delivery_attempts_total', 'refused'), moved('imagery_webhook_delivery_attempts_total', 'http_error'),
        moved('imagery_webhook_deliveries_total', 'exhausted')], [1, 5, 2], 'both end as exhausted: one refused for good, one out of attempts');
    });

    it('honours Retry-After on 503; the retry keeps its webhook-id, with a fresh timestamp and signature', async () => {
      const { call } = await account();
      const path = uniquePath('later');
      scripts.set(path, [503, 200]);
      const hook = await register(call, path);
      standardReceivers.set(path, hook.secret);
      await generate(call);
      const { jobId, outcome, requests } = await deliveryAt(path);
      assertDelivered(path, outcome);
      assert.equal(requests.length, 2, 'the first attempt verified too (a refused one is not retried)');
      const times = requests.map((r) => r.at);
      assert.ok(times[1] - times[0] >= 1900, `waited ${times[1] - times[0]} ms for Retry-After: 2 (the backoff alone is 100 ms)`);
      const [first, retry] = requests.map((r) => r.headers as Record<string, string>);
      assert.deepEqual([first['webhook-id'], retry['webhook-id']], [jobId, jobId]);
      for (const r of requests) {
        const sent = Number(r.headers['webhook-timestamp']);
        assert.ok(sent <= r.at / 1000 && sent > r.at / 1000 - 3, `webhook-timestamp ${sent} is the attempt's (received at ${r.at / 1000})`);
      }
      assert.ok(Number(retry['webhook-timestamp']) > Number(first['webhook-timestamp']), 'the retry has its own timestamp');
      assert.notEqual(retry['webhook-signature'], first['webhook-signature']);
      assert.equal(retry['x-service-signature'], first['x-service-signature'], 'the contract\'s signature is of the body alone');
    });

    it('a secret made before the standard alphabet (base64url, with - and _): the library verifies it once its - is + and its _ is /', async () => {
      const { call } = await account();
      const path = uniquePath('legacy');
      const hook = await register(call, path);
      const legacy = `whsec_${Buffer.concat([Buffer.from([0xfb, 0xef, 0xff]), randomBytes(21)]).toString('base64url')}`;
      assert.match(legacy, /^whsec_--__/);
      await stack.db.query('UPDATE webhooks SET sealed_secret = $2 WHERE id = $1', [hook.id, TEST_SECRETS.seal(legacy)]);
      assert.throws(() => new Webhook(legacy), /incorrect characters/, 'the library refuses it as it is');
      // What docs/api.md tells such a receiver: drop the prefix (whose own `_` stays), then swap the alphabet.
      standardReceivers.set(path, legacy.replace(/^whsec_/, '').replace(/-/g, '+').replace(/_/g, '/'));
      await generate(call);
      const { outcome, requests } = await deliveryAt(path);
      assertDelivered(path, outcome);
      assert.ok(verifies(legacy, requests[0].body, requests[0].headers['x-service-signature'] as string), 'X-Service-Signature as before');
    });

    it('ad-hoc webhook_url: unsigned (a Standard Webhooks id and timestamp, no signature), at most 3 attempts', async () => {
      const { call } = await account();
      const path = uniquePath('adhoc');
      scripts.set(path, [500]);
      await generate(call, { webhook_url: `${receiver.url}${path}` });
      const { jobId, requests } = await deliveryAt(path);
      assert.equal(requests.length, 3);
      assert.equal(requests[0].headers['x-service-event'], 'generation.completed');
      for (const { headers } of requests) {
        assert.deepEqual([headers['x-service-signature'], headers['webhook-signature']], [undefined, undefined]);
        assert.equal(headers['webhook-id'], jobId);
        assert.match(headers['webhook-timestamp'] as string, /^\d{10}$/);
      }
    });

    it('a receiver that answers 200 and streams without end: delivered, and the connection is dropped', async () => {
      const { call } = await account();
      let connectionClosed!: () => void;
      const closed = new Promise<void>((resolve) => (connectionClosed = resolve));
      const endless = await startHttpsServer((req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.on('close', () => connectionClosed());
        const chunk = Buffer.alloc(16 * 1024, 120);
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        pump();
      });
      try {
        await generate(call, { webhook_url: `${endless.url}/hook` });
        await eventually(async () => endless.requests.length, (n) => n >= 1);
        const jobId = endless.requests[0].headers['x-service-job-id'] as string;
        assert.deepEqual(await stack.temporal.workflow.getHandle(deliveryWorkflowId(jobId)).result(), { status: 'delivered' });
        await closed; // the worker read 64 KiB of the answer, then let go
        assert.equal(endless.requests.length, 1);
      } finally {
        await endless.close();
      }
    });

    it('sends only subscribed events, and failure and edit events too', async () => {
      const { call } = await account();
      const videoOnly = uniquePath('video-only');
      const edits = uniquePath('edits');
      await register(call, videoOnly, ['video.completed']);
      await register(call, edits, ['edit.completed']);
      const action = await generate(call);
      const [{ count }] = await stack.db.query(`SELECT count(*)::int AS count FROM webhook_deliveries WHERE action_id = $1`, [action.action_id]);
      assert.equal(count, 0, 'nothing planned for an unsubscribed event');
      const edit = await call('POST', `${V1}/edit/${action.action_id}`, { instruction: 'brighter' });
      await stack.temporal.workflow.getHandle(actionWorkflowId(edit.body.action_id)).result();
      const { requests } = await deliveryAt(edits);
      assert.equal(requests[0].headers['x-service-event'], 'edit.completed');
      assert.equal(JSON.parse(requests[0].body.toString()).type, 'edit');
      assert.equal(received(videoOnly).length, 0);
    });

    it('a deleted webhook receives nothing more, pending retries included', async () => {
      const { call } = await account();
      const path = uniquePath('deleted');
      scripts.set(path, [500]);
      const hook = await register(call, path);
      await generate(call);
      await eventually(async () => received(path).length, (n) => n >= 1);
      await call('DELETE', `${V1}/webhooks/${hook.id}`);
      const jobId = received(path)[0].headers['x-service-job-id'] as string;
      const outcome = await stack.temporal.workflow.getHandle(deliveryWorkflowId(jobId)).result();
      const seen = received(path).length;
      assert.ok(seen < 5, `stopped after deletion (${seen} attempts)`);
      assert.equal(outcome.status, 'skipped');
      await generate(call);
      assert.equal(received(path).length, seen, 'a new outcome is not sent to it');
    });

    it('redelivers with the same delivery id', async () => {
      const { call } = await account();
      const path = uniquePath('again');
      const hook = await register(call, path);
      standardReceivers.set(path, hook.secret);
      await generate(call);
      const { jobId } = await deliveryAt(path);
      const redeliver = await call('POST', `${V1}/webhooks/${hook.id}/deliveries/${jobId}/redeliver`);
      assert.equal(redeliver.status, 202);
      assert.equal(redeliver.body.delivery_id, jobId);
      assertDelivered(path, await stack.temporal.workflow.getHandle(deliveryWorkflowId(jobId)).result());
      await eventually(async () => received(path).length, (n) => n === 2);
      assert.equal(received(path)[1].headers['x-service-job-id'], jobId);
      assert.equal(received(path)[1].headers['webhook-id'], jobId, 'a redelivery is the same Standard Webhooks message');
      assert.equal((await call('POST', `${V1}/webhooks/${hook.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`)).status, 404);
    });

    it('answers 409 delivery_in_progress, changing nothing, while the last attempt\'s workflow has not closed yet', async () => {
      const { call } = await account();
      const path = uniquePath('closing');
      const hook = await register(call, path);
      await generate(call);
      const { jobId } = await deliveryAt(path);
      await stack.temporal.workflow.getHandle(deliveryWorkflowId(jobId)).result();
      const [before] = await stack.db.query('SELECT status FROM webhook_deliveries WHERE id = $1', [jobId]);
      // The delivery's row says delivered while a run under its workflow id is still open (as in its last moments).
      const open = await stack.temporal.workflow.start('webhookDeliveryWorkflow', {
        taskQueue: `nobody-polls-${jobId}`, workflowId: deliveryWorkflowId(jobId),
        args: [{ deliveryId: jobId, maxAttempts: 1, retryInitialMs: 100 }],
      });
      try {
        const refused = await call('POST', `${V1}/webhooks/${hook.id}/deliveries/${jobId}/redeliver`);
        assert.equal(refused.status, 409);
        assert.equal(refused.body.detail.error, 'delivery_in_progress');
        assert.deepEqual(await stack.db.query('SELECT status FROM webhook_deliveries WHERE id = $1', [jobId]), [before]);
      } finally {
        await open.terminate('test over');
      }
      assert.equal((await call('POST', `${V1}/webhooks/${hook.id}/deliveries/${jobId}/redeliver`)).status, 202, 'and redelivers once it has closed');
      await stack.temporal.workflow.getHandle(deliveryWorkflowId(jobId)).result();
    });
  });

  describe('the send-time address check', () => {
    let strictWorker: Stack;
    before(async () => {
      strictWorker = await startStack({ webhookRetryInitialMs: 100, workerOutboundAllowCidrs: [] });
    });
    after(() => strictWorker.stop());

    it('refuses, without calling, a URL that now points to a private address', async () => {
      const call = apiClient(strictWorker.baseUrl, (await newAccount(strictWorker.db, 50)).apiKey);
      const path = uniquePath('rebound');
      const hook = await call('POST', `${V1}/webhooks`, { url: `${receiver.url}${path}` });
      assert.equal(hook.status, 201, 'allowed when registered');
      const action = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K' })).body;
      await strictWorker.temporal.workflow.getHandle(actionWorkflowId(action.action_id)).result();
      const [delivery] = await strictWorker.db.query('SELECT id FROM webhook_deliveries WHERE action_id = $1', [action.action_id]);
      const outcome = await strictWorker.temporal.workflow.getHandle(deliveryWorkflowId(delivery.id)).result();
      assert.equal(outcome.status, 'failed');
      const [row] = await strictWorker.db.query('SELECT attempts, last_error FROM webhook_deliveries WHERE id = $1', [delivery.id]);
      assert.equal(row.attempts, 1);
      assert.match(row.last_error, /private or local/);
      assert.equal(received(path).length, 0);
    });
  });

  describe('the send-time address check of literal addresses', () => {
    let strictWorker: Stack;
    let literal: TestHttpsServer;
    before(async () => {
      strictWorker = await startStack({ webhookRetryInitialMs: 100, workerOutboundAllowCidrs: [] });
      literal = await startHttpsServer((req, res) => void res.writeHead(200).end('ok'));
    });
    after(async () => {
      await literal.close();
      await strictWorker.stop();
    });

    it('refuses, without connecting, loopback written as a literal in any spelling, registered or ad hoc, allowed when given', async () => {
      const call = apiClient(strictWorker.baseUrl, (await newAccount(strictWorker.db, 50)).apiKey);
      const port = literal.port;
      const registered = [`https://127.0.0.1:${port}/a`, `https://2130706433:${port}/b`, `https://0x7f.1:${port}/c`, `https://0177.0.0.1:${port}/d`,
        `https://[::ffff:127.0.0.1]:${port}/e`];
      for (const url of registered) assert.equal((await call('POST', `${V1}/webhooks`, { url })).status, 201, `${url} allowed when registered`);
      const action = (await call('POST', `${V1}/generate/photo`, {
        images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K', webhook_url: `https://[::ffff:7f00:1]:${port}/f`,
      })).body;
      await strictWorker.temporal.workflow.getHandle(actionWorkflowId(action.action_id)).result();
      const deliveries = await strictWorker.db.query('SELECT id FROM webhook_deliveries WHERE action_id = $1', [action.action_id]);
      assert.equal(deliveries.length, 6);
      for (const { id } of deliveries) {
        assert.equal((await strictWorker.temporal.workflow.getHandle(deliveryWorkflowId(id)).result()).status, 'failed');
        const [row] = await strictWorker.db.query('SELECT url, attempts, last_error FROM webhook_deliveries WHERE id = $1', [id]);
        assert.deepEqual([row.attempts, row.last_error], [1, 'points to a private or local address'], row.url);
      }
      assert.equal(literal.connections, 0, 'no connection was made');
    });
  });

  describe('DNS rebinding of webhook URLs (a DNS server of the test, 127.0.0.2 allowed, loopback refused)', () => {
    let stage: RebindingStage;
    let rebinding: Stack;
    let call: ReturnType<typeof apiClient>;
    before(async () => {
      stage = await startRebindingStage((req, res) => {
        const to = new URL(req.url!, 'https://x').searchParams.get('to');
        if (to) return void res.writeHead(302, { Location: to }).end();
        res.writeHead(200).end('allowed');
      });
      rebinding = await startStack({ webhookRetryInitialMs: 100, outboundAllowCidrs: ALLOW_CIDRS, outboundResolveHost: (host) => stage.dns.resolveHost(host) });
      call = apiClient(rebinding.baseUrl, (await newAccount(rebinding.db, 100)).apiKey);
    });
    after(async () => {
      await rebinding.stop();
      await stage.close();
    });
    afterEach(() => assert.equal(stage.refused.connections, 0, `${REFUSED_ADDRESS} got a connection`));

    /** Generates with `extra`, and answers the outcome and row of each of the action's deliveries. */
    async function deliveries(extra: Record<string, unknown> = {}) {
      const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K', ...extra });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await rebinding.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result();
      const rows = await rebinding.db.query('SELECT id, url FROM webhook_deliveries WHERE action_id = $1', [res.body.action_id]);
      return Promise.all(rows.map(async ({ id, url }: { id: string; url: string }) => {
        const outcome = await rebinding.temporal.workflow.getHandle(deliveryWorkflowId(id)).result();
        const [row] = await rebinding.db.query('SELECT attempts, last_error FROM webhook_deliveries WHERE id = $1', [id]);
        return { url, status: outcome.status, attempts: row.attempts, lastError: row.last_error };
      }));
    }
    const requestsTo = (path: string) => stage.allowed.requests.filter((r) => r.path === path).length;

    it('a name that keeps answering the allowed address is delivered to it (the stage works)', async () => {
      const url = stage.url('steady', '/steady', [ALLOWED_ADDRESS]);
      const hook = await call('POST', `${V1}/webhooks`, { url, events: ['generation.completed'] });
      assert.equal(hook.status, 201, JSON.stringify(hook.body));
      assert.deepEqual(await deliveries(), [{ url, status: 'delivered', attempts: 1, lastError: null }]);
      assert.equal(requestsTo('/steady'), 1);
      await call('DELETE', `${V1}/webhooks/${hook.body.id}`);
    });

    it('allowed when registered, refused when sent: the delivery fails on its first attempt and nothing connects', async () => {
      const url = stage.url('registered', '/registered', [ALLOWED_ADDRESS], [REFUSED_ADDRESS]);
      const hook = await call('POST', `${V1}/webhooks`, { url, events: ['generation.completed'] });
      assert.equal(hook.status, 201, 'allowed when registered');
      assert.deepEqual(await deliveries(), [{ url, status: 'failed', attempts: 1, lastError: 'points to a private or local address' }]);
      assert.equal(stage.dns.queries('registered.rebind.test'), 2, 'checked at registration, and again on the connect');
      assert.equal(requestsTo('/registered'), 0);
      await call('DELETE', `${V1}/webhooks/${hook.body.id}`);
    });

    it('an ad-hoc webhook_url allowed when the request is made, refused when sent: failed, nothing connects', async () => {
      const url = stage.url('ad-hoc', '/ad-hoc', [ALLOWED_ADDRESS], [REFUSED_ADDRESS]);
      assert.deepEqual(await deliveries({ webhook_url: url }), [{ url, status: 'failed', attempts: 1, lastError: 'points to a private or local address' }]);
      assert.equal(requestsTo('/ad-hoc'), 0);
    });

    it('a receiver that redirects to an internal address is not followed: the 302 is a failed attempt, the target never asked or reached', async () => {
      const target = stage.url('redirect-target', '/hook', [REFUSED_ADDRESS]);
      const url = stage.url('redirector', `/redirect?to=${encodeURIComponent(target)}`, [ALLOWED_ADDRESS]);
      assert.deepEqual(await deliveries({ webhook_url: url }), [{ url, status: 'failed', attempts: 3, lastError: 'HTTP 302' }]);
      assert.equal(requestsTo(new URL(url).pathname + new URL(url).search), 3);
      assert.equal(stage.dns.queries('redirect-target.rebind.test'), 0);
    });

    it('refused when registered (the name answers loopback first): 422', async () => {
      const url = stage.url('refused-first', '/hook', [REFUSED_ADDRESS], [ALLOWED_ADDRESS]);
      const res = await call('POST', `${V1}/webhooks`, { url });
      assert.deepEqual([res.status, res.body.detail?.[0]?.msg], [422, 'The URL points to a private or local address']);
    });
  });

  describe('failure events', () => {
    let failing: Stack;
    before(async () => {
      failing = await startStack({ provider: new ScriptedProvider([new ProviderError('content policy', 'refused', false)]) });
    });
    after(() => failing.stop());

    it('a failed generation sends generation.failed, and the action is not held back by the receiver', async () => {
      const call = apiClient(failing.baseUrl, (await newAccount(failing.db, 50)).apiKey);
      const path = uniquePath('failed');
      scripts.set(path, [500]);
      await call('POST', `${V1}/webhooks`, { url: `${receiver.url}${path}`, events: ['generation.failed'] });
      const action = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home' })).body;
      assert.equal((await failing.temporal.workflow.getHandle(actionWorkflowId(action.action_id)).result()).status, 'failed');
      assert.equal((await call('GET', `${V1}/status/${action.action_id}`)).body.status, 'failed', 'final before the receiver answers well');
      await eventually(async () => received(path).length, (n) => n >= 1);
      assert.equal(received(path)[0].headers['x-service-event'], 'generation.failed');
    });
  });

  describe('batch events', () => {
    const item = (id: string) => ({ external_id: id, type: 'photo', images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K' });
    const events = (path: string) => received(path).map((r) => r.headers['x-service-event']).sort();

    it('sends batch.completed to subscribed webhooks and the batch\'s webhook_url, items\' events only to those that ask', async () => {
      const { call, accountId } = await account();
      const [quiet, items, adHoc] = [uniquePath('batch-quiet'), uniquePath('batch-items'), uniquePath('batch-ad-hoc')];
      const hook = await register(call, quiet);
      const itemsHook = (await call('POST', `${V1}/webhooks`, { url: `${receiver.url}${items}`, item_events: true })).body;
      assert.equal(itemsHook.item_events, true);
      const created = await call('POST', '/api/v2/batches', { items: [item('a'), item('b')], webhook_url: `${receiver.url}${adHoc}`, item_events: true });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      await stack.temporal.workflow.getHandle(`batch-${created.body.batch_id}`).result();
      await eventually(async () => [events(quiet).length, events(items).length, events(adHoc).length], ([q, i, a]) => q >= 1 && i >= 3 && a >= 3);
      assert.deepEqual(events(quiet), ['batch.completed'], 'no item events without item_events');
      assert.deepEqual(events(items), ['batch.completed', 'generation.completed', 'generation.completed']);
      assert.deepEqual(events(adHoc), ['batch.completed', 'generation.completed', 'generation.completed']);
      const announced = received(quiet)[0];
      assert.ok(verifies(hook.secret, announced.body, announced.headers['x-service-signature'] as string), 'signed as every registered delivery');
      assert.deepEqual(JSON.parse(announced.body.toString()), {
        batch_id: created.body.batch_id, status: 'completed', items: 2, price: 10, charged: 10, livemode: true,
        counts: { pending: 0, running: 0, succeeded: 2, failed: 0, cancelled: 0, invalid: 0, skipped: 0 },
      });
      const log = (await call('GET', `${V1}/webhooks/${hook.id}/deliveries`)).body.deliveries;
      assert.deepEqual(log.map((d: { event: string; action_id: number | null; batch_id: string }) => [d.event, d.action_id, d.batch_id]),
        [['batch.completed', null, created.body.batch_id]]);
      const feed = await stack.db.query(`SELECT count(*)::int AS n FROM account_events WHERE account_id = $1 AND kind = 'delivery'`, [accountId]);
      assert.equal(feed[0].n, 4, 'the items\' deliveries are in the event feed; the batch\'s are not');
    });

    it('sends batch.failed when a batch stops for its budget', async () => {
      const { call } = await account();
      const path = uniquePath('batch-failed');
      await register(call, path, ['batch.failed']);
      const created = await call('POST', '/api/v2/batches', { items: [item('a'), item('b')], max_sparks: 5 });
      assert.equal((await stack.temporal.workflow.getHandle(`batch-${created.body.batch_id}`).result()).status, 'budget_exhausted');
      const { requests } = await deliveryAt(path);
      assert.equal(requests[0].headers['x-service-event'], 'batch.failed');
      assert.equal(JSON.parse(requests[0].body.toString()).status, 'budget_exhausted');
    });
  });
});
