/**
 * Thumbnails: a completed photo, and an edit of it, carry a `thumb_url` in the results list and in project detail:
 * a small WebP (at most 320 px a side) stored beside the result; a video has none; an action made before
 * thumbnails (no thumbnail recorded) shows null rather than a URL that would not answer.
 */
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { actionWorkflowId } from '../../src/temporal/contract';
import { apiClient, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('thumbnails', function () {
  this.timeout(90_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());

  it('a completed photo and its edit have a WebP thumbnail at most 320 px a side; a video has none', async () => {
    const { apiKey } = await newAccount(stack.db, 100);
    const call = apiClient(stack.baseUrl, apiKey);
    const photo = await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64(1200, 1600) }], product_name: 'Lamp', category_id: 'home', resolution: '2K' });
    await stack.temporal.workflow.getHandle(actionWorkflowId(photo.body.action_id)).result();
    const edit = await call('POST', `${V1}/edit/${photo.body.action_id}`, { instruction: 'warmer light' });
    const video = await call('POST', `${V1}/generate/video`, { image: { data: await jpegBase64() }, scenario: 'slow turn' });
    await Promise.all([edit.body.action_id, video.body.action_id].map((id) => stack.temporal.workflow.getHandle(actionWorkflowId(id)).result()));

    const { items } = (await call('GET', `${V1}/results`)).body;
    const byId = new Map(items.map((i: { action_id: number }) => [i.action_id, i]));
    for (const id of [photo.body.action_id, edit.body.action_id]) {
      const item: any = byId.get(id);
      assert.equal(item.status, 'completed');
      const thumb = await fetch(item.thumb_url);
      assert.equal(thumb.status, 200);
      assert.equal(thumb.headers.get('content-type'), 'image/webp');
      const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata();
      assert.equal(meta.format, 'webp');
      assert.ok(Math.max(meta.width!, meta.height!) <= 320 && Math.max(meta.width!, meta.height!) >= 200, `${meta.width}x${meta.height}`);
      const full = await sharp(Buffer.from(await (await fetch(item.result_url)).arrayBuffer())).metadata();
      assert.ok(full.width! > meta.width!, 'the thumbnail is smaller than the result');
    }
    assert.equal((byId.get(video.body.action_id) as any).thumb_url, null, 'no thumbnail for a video');

    const project = await call('GET', `${V1}/projects/${photo.body.project_id}`);
    const summary = project.body.actions.find((a: { id: number }) => a.id === photo.body.action_id);
    assert.match(summary.thumb_url, /\.thumb\.webp\?/);
  });

  it('shows null for a result stored before thumbnails were made', async () => {
    const { apiKey } = await newAccount(stack.db, 100);
    const call = apiClient(stack.baseUrl, apiKey);
    const photo = await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }], product_name: 'Lamp', category_id: 'home', resolution: '1K' });
    await stack.temporal.workflow.getHandle(actionWorkflowId(photo.body.action_id)).result();
    await stack.db.query('UPDATE actions SET has_thumbnail = false WHERE id = $1', [photo.body.action_id]); // as the migration leaves older results
    const [item] = (await call('GET', `${V1}/results`)).body.items;
    assert.equal(item.thumb_url, null);
    assert.ok(item.result_url);
  });
});
