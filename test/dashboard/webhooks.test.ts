/**
 * Webhooks through the dashboard's routes against a real worker and a local HTTPS receiver: the secret in the
 * registration's answer only; a webhook switched off receives nothing; the delivery log shows attempts, answer codes
 * and timings, and a redelivery sends the same delivery again; nothing of another account by any id.
 */
import assert from 'node:assert/strict';
import { signedInUser } from '../support/dashboard-client';
import { apiClient, eventually, jpegBase64, V1 } from '../support/fixtures';
import { startHttpsServer, type TestHttpsServer } from '../support/https-server';
import { Stack, startStack } from '../support/stack';
import { actionWorkflowId, deliveryWorkflowId } from '../../src/temporal/contract';

describe('dashboard webhooks', function () {
  this.timeout(90_000);
  let stack: Stack;
  let receiver: TestHttpsServer;
  let image: string;
  /** The status each path answers now. */
  const answers = new Map<string, number>();
  before(async () => {
    [stack, receiver, image] = await Promise.all([
      startStack({ webhookRetryInitialMs: 100 }),
      startHttpsServer((req, res) => { res.writeHead(answers.get(req.url!) ?? 200).end('ok'); }),
      jpegBase64(),
    ]);
  });
  after(async () => {
    await receiver?.close();
    await stack?.stop();
  });

  async function generate(apiKey: string): Promise<number> {
    const res = await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result();
    return res.body.action_id;
  }

  it('registers with the secret shown once, logs a refused delivery, and redelivers it with the same id', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    answers.set('/refusing', 400); // a permanent refusal: one attempt, failed
    const created = await browser.call('POST', '/webhooks', { url: `${receiver.url}/refusing`, events: ['generation.completed'] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.secret, /^whsec_/);
    const listed = await browser.call('GET', '/webhooks');
    assert.deepEqual(listed.body.webhooks.map((w: { id: number }) => w.id), [created.body.id]);
    assert.ok(listed.body.events.includes('video.failed'), 'the events one can subscribe to');
    assert.ok(!JSON.stringify(listed.body).includes(created.body.secret), 'the secret appears in no later answer');

    const actionId = await generate(apiKey!);
    const log = () => browser.call('GET', `/webhooks/${created.body.id}/deliveries`);
    const [failed] = (await eventually(log, (r) => r.body.deliveries[0]?.status === 'failed')).body.deliveries;
    assert.deepEqual([failed.action_id, failed.event, failed.attempts, failed.last_status_code], [actionId, 'generation.completed', 1, 400]);
    assert.ok(failed.created_at && failed.last_attempt_at && failed.delivered_at === null);
    await stack.temporal.workflow.getHandle(deliveryWorkflowId(failed.delivery_id)).result(); // its attempts are over

    answers.set('/refusing', 200);
    const again = await browser.call('POST', `/webhooks/${created.body.id}/deliveries/${failed.delivery_id}/redeliver`);
    assert.deepEqual([again.status, again.body.delivery_id, again.body.status], [202, failed.delivery_id, 'pending']);
    const [delivered] = (await eventually(log, (r) => r.body.deliveries[0]?.status === 'succeeded')).body.deliveries;
    assert.deepEqual([delivered.attempts, delivered.last_status_code], [2, 200]);
    assert.ok(delivered.delivered_at);
    const sent = receiver.requests.filter((r) => r.path === '/refusing').map((r) => r.headers['x-service-job-id']);
    assert.deepEqual(sent, [failed.delivery_id, failed.delivery_id], 'the same delivery id each time');
  });

  it('a webhook switched off is sent nothing, and receives again once switched on; one deleted is gone', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    const { body: hook } = await browser.call('POST', '/webhooks', { url: `${receiver.url}/switched`, item_events: true });
    assert.equal(hook.item_events, true, 'batch items\' events asked for');
    assert.equal((await browser.call('GET', '/webhooks')).body.webhooks.find((w: { id: number }) => w.id === hook.id).item_events, true);
    const off = await browser.call('PATCH', `/webhooks/${hook.id}`, { is_active: false });
    assert.deepEqual([off.status, off.body.is_active], [200, false]);
    await generate(apiKey!);
    assert.equal((await browser.call('PATCH', `/webhooks/${hook.id}`, { is_active: true })).body.is_active, true);
    const second = await generate(apiKey!);
    const { body: { deliveries } } = await eventually(() => browser.call('GET', `/webhooks/${hook.id}/deliveries`), (r) => r.body.deliveries[0]?.status === 'succeeded');
    assert.deepEqual(deliveries.map((d: { action_id: number }) => d.action_id), [second], 'nothing of the action finished while it was off');

    assert.equal((await browser.call('DELETE', `/webhooks/${hook.id}`)).status, 204);
    assert.deepEqual((await browser.call('GET', '/webhooks')).body.webhooks, []);
    assert.equal((await browser.call('PATCH', `/webhooks/${hook.id}`, { is_active: true })).status, 404);
  });

  it('refuses what the public API refuses: a private address, an unknown event, a sixth webhook', async () => {
    const { browser } = await signedInUser(stack.baseUrl, stack.db);
    const privateAddress = await browser.call('POST', '/webhooks', { url: 'https://10.0.0.1/hook' });
    assert.deepEqual([privateAddress.status, privateAddress.body.detail[0].loc], [422, ['body', 'url']]);
    const unknownEvent = await browser.call('POST', '/webhooks', { url: `${receiver.url}/x`, events: ['photo.done'] });
    assert.deepEqual([unknownEvent.status, unknownEvent.body.detail[0].loc], [422, ['body', 'events']]);
    for (let i = 0; i < 5; i++) assert.equal((await browser.call('POST', '/webhooks', { url: `${receiver.url}/n${i}` })).status, 201);
    const sixth = await browser.call('POST', '/webhooks', { url: `${receiver.url}/n5` });
    assert.equal(sixth.status, 422);
    assert.match(sixth.body.detail[0].msg, /already has 5 webhooks/);
  });

  it('a member of account A reaches no webhook or delivery of account B by any id', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db, { role: 'member' });
    const b = await signedInUser(stack.baseUrl, stack.db);
    const { body: bHook } = await b.browser.call('POST', '/webhooks', { url: `${receiver.url}/b` });
    await generate(b.apiKey!);
    const [bDelivery] = (await eventually(() => b.browser.call('GET', `/webhooks/${bHook.id}/deliveries`), (r) => r.body.deliveries.length > 0)).body.deliveries;
    for (const [method, path, body] of [
      ['GET', `/webhooks/${bHook.id}/deliveries`, undefined],
      ['PATCH', `/webhooks/${bHook.id}`, { is_active: false }],
      ['DELETE', `/webhooks/${bHook.id}`, undefined],
      ['POST', `/webhooks/${bHook.id}/deliveries/${bDelivery.delivery_id}/redeliver`, undefined],
    ] as const) {
      const answer = await a.browser.call(method, path, body);
      assert.deepEqual([answer.status, answer.body?.detail?.error], [404, 'not_found'], `${method} ${path}`);
    }
    assert.deepEqual((await a.browser.call('GET', '/webhooks')).body.webhooks, []);
    assert.equal((await b.browser.call('GET', '/webhooks')).body.webhooks[0].is_active, true, 'B\'s webhook untouched');
  });
});
