/**
 * The dashboard's gallery and action detail: thumbnails newest first, paged by cursor; an edit's detail with its
 * parameters (no stored input keys), money, its card's version tree and its event timeline; the detail's live
 * stream following an action to its end; nothing of another account (404), a forged cursor refused.
 */
import assert from 'node:assert/strict';
import { actionWorkflowId } from '../../src/temporal/contract';
import { DASHBOARD_API, signedInUser } from '../support/dashboard-client';
import { apiClient, jpegBase64, V1 } from '../support/fixtures';
import { openSse } from '../support/sse-client';
import { Stack, startStack } from '../support/stack';

describe('dashboard gallery and action detail', function () {
  this.timeout(90_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    [stack, image] = await Promise.all([startStack(), jpegBase64()]);
  });
  after(() => stack?.stop());

  const finished = (actionId: number) => stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();

  it('lists photos and edits with thumbnails, newest first, page by page; an edit\'s detail has its parameters, money, versions and timeline', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    const call = apiClient(stack.baseUrl, apiKey!);
    // From an upload: its params list its stored key as decoded on arrival (`wholeInputs`), which the detail hides too.
    const { upload_id: uploadId } = (await call('POST', `${V1}/upload`, { image: { data: image } })).body;
    const photo = (await call('POST', `${V1}/generate/photo`, { images: [{ data: uploadId }], product_name: 'Kettle', category_id: 'home', resolution: '1K' })).body;
    await finished(photo.action_id);
    const edit = (await call('POST', `${V1}/edit/${photo.action_id}`, { instruction: 'on a marble table' })).body;
    await finished(edit.action_id);

    const all = (await browser.call('GET', '/gallery')).body;
    assert.deepEqual(all.items.map((i: { id: number }) => i.id), [edit.action_id, photo.action_id]);
    assert.equal(all.next_cursor, null);
    for (const item of all.items) {
      assert.equal(item.product_name, 'Kettle');
      assert.equal((await fetch(item.thumb_url)).headers.get('content-type'), 'image/webp');
    }
    const first = (await browser.call('GET', '/gallery?limit=1')).body;
    const second = (await browser.call('GET', `/gallery?limit=1&cursor=${first.next_cursor}`)).body;
    assert.deepEqual([...first.items, ...second.items], all.items);
    assert.equal(second.next_cursor, null);

    const detail = (await browser.call('GET', `/actions/${edit.action_id}`)).body;
    assert.equal(detail.parameters.instruction, 'on a marble table');
    assert.ok(!('source' in detail.parameters) && !('inputs' in detail.parameters), 'no stored input keys');
    const photoDetail = (await browser.call('GET', `/actions/${photo.action_id}`)).body;
    assert.equal(photoDetail.parameters.product_name ?? photoDetail.parameters.productName, 'Kettle');
    assert.doesNotMatch(JSON.stringify(photoDetail.parameters), /inputs\//, 'no stored input keys in a photo\'s parameters');
    assert.deepEqual([detail.status, detail.held, detail.charged > 0, detail.charged], ['completed', 0, true, detail.price]);
    assert.equal((await fetch(detail.result_url)).status, 200);
    assert.deepEqual(detail.versions.map((v: { id: number; depth: number; instruction: string | null }) => [v.id, v.depth, v.instruction]),
      [[photo.action_id, 0, null], [edit.action_id, 1, 'on a marble table']]);
    assert.deepEqual(detail.timeline.map((e: { action_status: string }) => e.action_status).at(-1), 'completed');
    assert.deepEqual(detail.timeline.map((e: { seq: number }) => e.seq), detail.timeline.map((_: unknown, i: number) => i + 1));
  });

  it('streams an action\'s detail as it moves, to its end', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    const accepted = (await apiClient(stack.baseUrl, apiKey!)('POST', `${V1}/generate/photo`, {
      images: [{ data: image }], product_name: 'Bowl', category_id: 'home', resolution: '1K',
    })).body;
    const stream = await openSse(`${stack.baseUrl}${DASHBOARD_API}/actions/${accepted.action_id}/events`, { Cookie: `imagery_session=${browser.cookie()}` });
    assert.equal(stream.status, 200);
    const done = await stream.waitFor((e) => e.event === 'action' && e.data.status === 'completed');
    assert.ok(done.data.result_url && done.data.thumb_url);
    stream.drop();
  });

  it('answers 404 for another account\'s action, its stream too, and 422 for a forged cursor', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db);
    const b = await signedInUser(stack.baseUrl, stack.db);
    const bAction = (await apiClient(stack.baseUrl, b.apiKey!)('POST', `${V1}/generate/photo`, {
      images: [{ data: image }], product_name: 'Secret', category_id: 'home', resolution: '1K',
    })).body.action_id;
    await finished(bAction);
    const detail = await a.browser.call('GET', `/actions/${bAction}`);
    assert.deepEqual([detail.status, detail.body.detail.error], [404, 'not_found']);
    const stream = await openSse(`${stack.baseUrl}${DASHBOARD_API}/actions/${bAction}/events`, { Cookie: `imagery_session=${a.browser.cookie()}` });
    assert.equal(stream.status, 404);
    assert.deepEqual((await a.browser.call('GET', '/gallery')).body.items, []);
    for (const cursor of ['x', Buffer.from(JSON.stringify(['2026-02-30 00:00:00.000000+00', 1])).toString('base64url')]) {
      assert.equal((await a.browser.call('GET', `/gallery?cursor=${cursor}`)).status, 422);
    }
  });
});
