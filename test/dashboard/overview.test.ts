/**
 * The dashboard's overview: sparks, today's helper calls and the latest actions and jobs in one answer, and its live
 * stream, which sends the overview again as the account's work moves (an action generated with a key shows up,
 * then completes, without a reload); the stream follows the signed-in user's account only, and a signed-out
 * browser's reconnect is refused.
 */
import assert from 'node:assert/strict';
import { DASHBOARD_API, signedInUser } from '../support/dashboard-client';
import { DASHBOARD_STREAMS_PER_USER } from '../../api/live/action-event-hub';
import { apiClient, eventually, jpegBase64, V1 } from '../support/fixtures';
import { openSse } from '../support/sse-client';
import { Stack, startStack } from '../support/stack';

describe('dashboard overview', function () {
  this.timeout(60_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    [stack, image] = await Promise.all([startStack(), jpegBase64()]);
  });
  after(() => stack?.stop());

  const streamOf = (browser: { cookie(): string | undefined }) => openSse(`${stack.baseUrl}${DASHBOARD_API}/overview/events`, { Cookie: `imagery_session=${browser.cookie()}` });

  it('streams the overview at once and again as an action generated with a key is accepted and completes', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    const first = await browser.call('GET', '/overview');
    assert.deepEqual(first.body, { balance: 100, available: 100, held: 0, helpers: { used_today: 0, free_limit: 100 }, latest: [] });

    const stream = await streamOf(browser);
    assert.equal(stream.status, 200);
    await stream.waitFor((e) => e.event === 'overview' && e.data.latest.length === 0);
    const accepted = await apiClient(stack.baseUrl, apiKey!)('POST', `${V1}/generate/photo`, {
      images: [{ data: image }], product_name: 'Teapot', category_id: 'home', resolution: '1K',
    });
    assert.equal(accepted.status, 200);
    const done = await stream.waitFor((e) => e.data.latest[0]?.status === 'completed');
    const [action] = done.data.latest;
    assert.deepEqual([action.id, action.type, action.product_name, action.percent], [accepted.body.action_id, 'generate', 'Teapot', 100]);
    assert.equal(done.data.held, 0);
    assert.ok(done.data.balance < 100, 'charged');
    for (let i = 1; i < stream.events.length; i++) {
      assert.notDeepEqual(stream.events[i].data, stream.events[i - 1].data, 'an overview is sent only when it changed');
    }
    stream.drop();
  });

  it('follows only the user\'s own account, and refuses a signed-out browser', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db);
    const b = await signedInUser(stack.baseUrl, stack.db);
    const stream = await streamOf(a.browser);
    await stream.waitFor((e) => e.event === 'overview');
    const accepted = await apiClient(stack.baseUrl, b.apiKey!)('POST', `${V1}/generate/photo`, {
      images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K',
    });
    await openSse(`${stack.baseUrl}${DASHBOARD_API}/overview/events`, { Cookie: `imagery_session=${b.browser.cookie()}` })
      .then((s) => s.waitFor((e) => e.data.latest[0]?.id === accepted.body.action_id && e.data.latest[0].status === 'completed').finally(() => s.drop()));
    assert.deepEqual(stream.events.map((e) => e.data.latest), [[]], 'nothing of B in A\'s stream');
    stream.drop();

    const cookie = a.browser.cookie();
    assert.equal((await a.browser.call('POST', '/sign-out')).status, 204);
    const refused = await openSse(`${stack.baseUrl}${DASHBOARD_API}/overview/events`, { Cookie: `imagery_session=${cookie}` });
    assert.equal(refused.status, 401);
  });

  it(`a user holds at most ${DASHBOARD_STREAMS_PER_USER} dashboard streams in a process; one more is refused until one closes`, async () => {
    const { browser } = await signedInUser(stack.baseUrl, stack.db);
    const streams = await Promise.all(Array.from({ length: DASHBOARD_STREAMS_PER_USER }, () => streamOf(browser)));
    assert.deepEqual(streams.map((s) => s.status), streams.map(() => 200));
    const refused = await streamOf(browser);
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.text).detail.error, 'too_many_streams');
    streams[0].drop();
    await eventually(async () => (await streamOf(browser)).status, (status) => status === 200);
    for (const s of streams) s.drop();
  });
});
