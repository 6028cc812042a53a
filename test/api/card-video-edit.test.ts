import assert from 'node:assert/strict';
import sharp from 'sharp';
import { actionWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { probeVideo } from '../support/media';
import { Stack, startStack } from '../support/stack';

async function meanBrightness(bytes: Buffer): Promise<number> {
  const stats = await sharp(bytes).stats();
  return stats.channels.slice(0, 3).reduce((sum, c) => sum + c.mean, 0) / 3;
}

describe('cards, videos and edits over HTTP', function () {
  this.timeout(90_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack();
    image = await jpegBase64(400, 500, '#2060c0');
  });
  after(() => stack.stop());

  async function finish(actionId: number) {
    return stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
  }
  async function download(call: ReturnType<typeof apiClient>, actionId: number): Promise<Buffer> {
    const status = (await call('GET', `${V1}/status/${actionId}`)).body;
    assert.equal(status.status, 'completed', JSON.stringify(status));
    return Buffer.from(await (await fetch(status.result_url)).arrayBuffer());
  }

  describe('POST /generate/card', () => {
    it('renders an infographic at 2K by default (resolution ignored), detecting what is missing', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const res = await call('POST', `${V1}/generate/card`, { images: [{ data: image }], resolution: '4K', locale: 'en' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.style, 'infographic');
      assert.deepEqual(res.body.detected, { category_id: 'other', concept_id: 'infographic', product_name: 'Blue product' });
      await finish(res.body.action_id);
      const meta = await sharp(await download(call, res.body.action_id)).metadata();
      assert.deepEqual([meta.width, meta.height], [1536, 2048]);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15, 'a card costs `generation`, 4K or not');
      const [action] = await stack.db.query('SELECT params FROM actions WHERE id = $1', [res.body.action_id]);
      assert.equal(action.params.userText, 'Quality materials\nThoughtful design\nEasy to use', 'user_text defaults to the detected qualities');
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('cinematic is a clean dark frame; design_key and design_reference_image give 400 unsupported_parameter with nothing held', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const body = { images: [{ data: image }], product_name: 'Lamp', category_id: 'home', user_text: 'Warm light, Dimmable' };
      for (const extra of [{ design_key: 'minimal' }, { design_reference_image: { data: image } }]) {
        const refused = await call('POST', `${V1}/generate/card`, { ...body, style: 'cinematic', ...extra });
        assert.deepEqual([refused.status, refused.body.detail.error], [400, 'unsupported_parameter']);
      }
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });

      const cinematic = (await call('POST', `${V1}/generate/card`, { ...body, style: 'cinematic', aspect_ratio: '16:9' })).body;
      const infographic = (await call('POST', `${V1}/generate/card`, { ...body, design_key: 'minimal', creativity: 0.2 })).body;
      assert.equal(cinematic.style, 'cinematic');
      await Promise.all([finish(cinematic.action_id), finish(infographic.action_id)]);
      const [dark, light] = await Promise.all([download(call, cinematic.action_id), download(call, infographic.action_id)]);
      assert.deepEqual([(await sharp(dark).metadata()).width, (await sharp(dark).metadata()).height], [2048, 1152]);
      assert.ok(await meanBrightness(dark) < (await meanBrightness(light)) - 40, 'cinematic is darker than the infographic');
    });

    it('accepts a design reference image for an infographic and validates creativity', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const reference = await jpegBase64(300, 300, '#e0a020');
      const res = await call('POST', `${V1}/generate/card`, { images: [{ data: image }], product_name: 'Cup', category_id: 'home', design_reference_image: { data: reference }, creativity: 0 });
      assert.equal(res.status, 200);
      assert.equal((await finish(res.body.action_id)).status, 'completed');
      assert.equal((await call('POST', `${V1}/generate/card`, { images: [{ data: image }], creativity: 1.5 })).status, 422);
    });
  });

  describe('POST /generate/video', () => {
    it('makes a 5 second MP4 by default, priced video_5sec', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 30);
      const call = apiClient(stack.baseUrl, apiKey);
      const res = await call('POST', `${V1}/generate/video`, { image: { data: image }, scenario: 'slow turn' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.detected, null);
      await finish(res.body.action_id);
      const video = await probeVideo(await download(call, res.body.action_id));
      assert.ok(Math.abs(video.durationSec - 5) < 0.1, `duration ${video.durationSec}`);
      assert.deepEqual([video.width, video.height], [720, 960]);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 20, 'video_5sec is 10');
      const [{ type, content_type }] = await stack.db.query('SELECT a.type, c.content_type FROM actions a JOIN cards c ON c.id = a.card_id WHERE a.id = $1', [res.body.action_id]);
      assert.deepEqual([type, content_type], ['video', 'video']);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('loop mode makes 10 seconds that end where they start, priced video_10sec', async () => {
      const { apiKey } = await newAccount(stack.db, 30);
      const call = apiClient(stack.baseUrl, apiKey);
      const res = await call('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 10, loop_mode: true, final_frame: { data: 'ignored-in-loop-mode' }, aspect_ratio: '1:1' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await finish(res.body.action_id);
      const video = await probeVideo(await download(call, res.body.action_id));
      assert.ok(Math.abs(video.durationSec - 10) < 0.1, `duration ${video.durationSec}`);
      assert.deepEqual([video.width, video.height], [960, 960]);
      assert.ok(Math.abs(await meanBrightness(video.firstFrame) - await meanBrightness(video.lastFrame)) < 2, 'last frame equals the first');
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 12, 'video_10sec is 18');
    });

    it('dissolves into a final frame when one is given', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 30)).apiKey);
      const white = await jpegBase64(400, 400, '#ffffff');
      const res = await call('POST', `${V1}/generate/video`, { image: { data: image }, final_frame: { data: white }, card_mode: true });
      await finish(res.body.action_id);
      const video = await probeVideo(await download(call, res.body.action_id));
      assert.ok(await meanBrightness(video.lastFrame) > (await meanBrightness(video.firstFrame)) + 40, 'ends on the (white) final frame');
    });

    it('refuses an image under 300x300 with 400 image_too_small before any hold, and odd durations with 422', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 30);
      const call = apiClient(stack.baseUrl, apiKey);
      const small = await call('POST', `${V1}/generate/video`, { image: { data: await jpegBase64(299, 600) } });
      assert.deepEqual([small.status, small.body.detail.error], [400, 'image_too_small']);
      assert.equal((await call('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 7 })).status, 422);
      assert.equal((await call('POST', `${V1}/generate/video`, { image: { data: image }, scenario: 'x'.repeat(1501) })).status, 422);
      const [{ count }] = await stack.db.query('SELECT count(*)::int AS count FROM actions WHERE account_id = $1', [accountId]);
      assert.equal(count, 0);
    });
  });

  describe('POST /edit/{action_id}', () => {
    it('makes a new version of the card from the parent, one level deeper, priced improvement', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const parent = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], resolution: '1K' })).body;
      await finish(parent.action_id);
      const edit = await call('POST', `${V1}/edit/${parent.action_id}`, { instruction: 'make it brighter' });
      assert.equal(edit.status, 200, JSON.stringify(edit.body));
      assert.deepEqual({ ...edit.body, action_id: 0 }, { action_id: 0, parent_action_id: parent.action_id, status: 'pending', poll_url: `${V1}/status/${edit.body.action_id}` });
      await finish(edit.body.action_id);

      const [before, after] = await Promise.all([download(call, parent.action_id), download(call, edit.body.action_id)]);
      const [b, a] = await Promise.all([sharp(before).metadata(), sharp(after).metadata()]);
      assert.deepEqual([a.width, a.height], [b.width, b.height], 'derived from the parent');
      assert.ok(await meanBrightness(after) > await meanBrightness(before) + 5, 'brighter, as asked');

      const card = (await call('GET', `${V1}/cards/${parent.card_id}`)).body;
      assert.equal(card.active_action_id, edit.body.action_id);
      assert.deepEqual(card.actions.map((x: { id: number; depth: number; parent_action_id: number | null; type: string }) => [x.id, x.type, x.depth, x.parent_action_id]),
        [[parent.action_id, 'generate', 0, null], [edit.body.action_id, 'edit', 1, parent.action_id]]);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 12, 'generation 5 + improvement 3');
      await assertMoneyConsistent(stack.db, accountId);

      const second = await call('POST', `${V1}/edit/${edit.body.action_id}`, { instruction: 'black and white' });
      await finish(second.body.action_id);
      assert.equal((await call('GET', `${V1}/status/${second.body.action_id}`)).body.status, 'completed');
      const [row] = await stack.db.query('SELECT depth FROM actions WHERE id = $1', [second.body.action_id]);
      assert.equal(row.depth, 2);
    });

    it('refuses sources that are not completed, too deep, videos, foreign or unknown', async () => {
      const owner = await newAccount(stack.db, 40);
      const call = apiClient(stack.baseUrl, owner.apiKey);
      const done = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], resolution: '1K' })).body;
      await finish(done.action_id);

      const { placeAction } = await import('../support/fixtures');
      const pending = await placeAction(stack.db, owner.accountId);
      const notDone = await call('POST', `${V1}/edit/${pending}`, { instruction: 'x' });
      assert.deepEqual([notDone.status, notDone.body.detail.error, notDone.body.detail.details], [409, 'action_not_completed', { status: 'pending' }]);

      await stack.db.query('UPDATE actions SET depth = 99 WHERE id = $1', [done.action_id]);
      const deep = await call('POST', `${V1}/edit/${done.action_id}`, { instruction: 'x' });
      assert.deepEqual([deep.status, deep.body.detail.error], [409, 'edit_depth_exceeded']);
      await stack.db.query('UPDATE actions SET depth = 98 WHERE id = $1', [done.action_id]);
      const deepest = await call('POST', `${V1}/edit/${done.action_id}`, { instruction: 'darker' });
      assert.equal(deepest.status, 200, 'depth 99 is allowed');
      await finish(deepest.body.action_id);

      const video = (await call('POST', `${V1}/generate/video`, { image: { data: image } })).body;
      await finish(video.action_id);
      const editVideo = await call('POST', `${V1}/edit/${video.action_id}`, { instruction: 'x' });
      assert.deepEqual([editVideo.status, editVideo.body.detail.error], [400, 'unsupported_parameter']);

      const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const foreign = await stranger('POST', `${V1}/edit/${done.action_id}`, { instruction: 'x' });
      assert.deepEqual([foreign.status, foreign.body.detail.error], [403, 'forbidden']);
      assert.equal((await call('POST', `${V1}/edit/99999999`, { instruction: 'x' })).status, 404);
      assert.equal((await call('POST', `${V1}/edit/${done.action_id}`, { instruction: 'x'.repeat(1001) })).status, 422);
      assert.equal((await call('POST', `${V1}/edit/${done.action_id}`, {})).status, 422);
      await assertMoneyConsistent(stack.db, owner.accountId);
    });
  });
});
