/**
 * GET/HEAD /assets/<key>: the API's own signed URL (the public `result_url`) in front of either delivery. With an S3
 * store and `ASSET_DELIVERY=redirect`, a 302 to a short-lived presigned URL of the suite's versitygw; with `stream`
 * (and always with the folder store) the bytes through the API, one `Range` at a time.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import sharp from 'sharp';
import { parseRange } from '../../api/assets';
import type { AssetStore } from '../../src/storage/asset-store';
import { actionWorkflowId } from '../../src/temporal/contract';
import { testEnvironment, testS3Store } from '../support/environment';
import { apiClient, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/** A stored clip of an mp4's size (a few MB) under a fresh result key, and its public signed URL. */
async function storedClip(stack: Stack, size = 3 * 1024 * 1024 + 11) {
  const bytes = randomBytes(size);
  const key = `results/${randomBytes(3).readUIntBE(0, 3)}/${randomBytes(16).toString('hex')}.mp4`;
  await stack.store.put(key, bytes);
  return { key, bytes, url: stack.signer.url(key).url };
}

const body = async (res: Response) => Buffer.from(await res.arrayBuffer());

/** The checks every delivery shares: a link that is not ours is refused, a key with nothing stored is our 404. */
function refusals(stackOf: () => Stack) {
  it('refuses a tampered signature with 403 JSON, and answers a missing object with 404 JSON', async () => {
    const stack = stackOf();
    const { url } = await storedClip(stack, 1000);
    const tampered = new URL(url);
    const signature = tampered.searchParams.get('signature')!;
    tampered.searchParams.set('signature', `${signature[0] === 'a' ? 'b' : 'a'}${signature.slice(1)}`);
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(tampered, { method, redirect: 'manual' });
      assert.equal(res.status, 403, method);
      if (method === 'GET') assert.equal(((await res.json()) as any).detail.error, 'forbidden');
    }
    const missing = stack.signer.url(`results/1/${randomBytes(16).toString('hex')}.mp4`).url;
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(missing, { method, redirect: 'manual' });
      assert.equal(res.status, 404, method);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      if (method === 'GET') assert.deepEqual(await res.json(), { detail: { error: 'not_found', message: 'Asset not found' } });
    }
  });
}

describe('GET /assets with an S3 store, ASSET_DELIVERY=redirect', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false, store: testS3Store(), assetDelivery: 'redirect', s3PresignSeconds: 120 });
  });
  after(() => stack.stop());

  it('answers 302 to a short-lived presigned URL that serves the bytes (ranges too), uncached', async () => {
    const { bytes, url } = await storedClip(stack);
    const res = await fetch(url, { redirect: 'manual' });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('cache-control'), 'private, no-store');
    const location = new URL(res.headers.get('location')!);
    assert.equal(location.origin, testEnvironment().s3.endpoint);
    assert.equal(location.searchParams.get('X-Amz-Expires'), '120');

    const followed = await fetch(url);
    assert.deepEqual([followed.status, followed.headers.get('content-type')], [200, 'video/mp4']);
    assert.deepEqual(await body(followed), bytes);
    const ranged = await fetch(url, { headers: { Range: 'bytes=1000-1999' } });
    assert.deepEqual([ranged.status, ranged.headers.get('content-range')], [206, `bytes 1000-1999/${bytes.length}`]);
    assert.deepEqual(await body(ranged), bytes.subarray(1000, 2000));
  });

  it('HEAD redirects to a presigned HEAD, which answers the size and type', async () => {
    const { bytes, url } = await storedClip(stack, 4096);
    const manual = await fetch(url, { method: 'HEAD', redirect: 'manual' });
    assert.equal(manual.status, 302);
    const res = await fetch(url, { method: 'HEAD' });
    assert.deepEqual([res.status, res.headers.get('content-length'), res.headers.get('content-type')], [200, String(bytes.length), 'video/mp4']);
  });

  it('never presigns for longer than the signed link has left', async () => {
    const { key } = await storedClip(stack, 10);
    const res = await fetch(stack.signer.url(key, 30).url, { redirect: 'manual' });
    assert.equal(res.status, 302);
    const expires = Number(new URL(res.headers.get('location')!).searchParams.get('X-Amz-Expires'));
    assert.ok(expires >= 1 && expires <= 30, String(expires));
  });

  refusals(() => stack);
});

describe('a photo generated with the S3 store', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ store: testS3Store(), assetDelivery: 'redirect' });
  });
  after(() => stack.stop());

  it('stores its input and result in the bucket, and its result_url redirects to the image', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const created = await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }], product_name: 'Mug', category_id: 'home' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await stack.temporal.workflow.getHandle(actionWorkflowId(created.body.action_id)).result();
    const status = await call('GET', created.body.poll_url);
    assert.equal(status.body.status, 'completed');
    const [action] = await stack.db.query('SELECT params, asset_path FROM actions WHERE id = $1', [created.body.action_id]);
    for (const key of [action.params.inputs[0], action.asset_path]) {
      const stored = await stack.store.open(key);
      assert.ok(stored && stored.size > 0, `${key} is in the bucket`);
      stored.stream.destroy();
    }

    const redirect = await fetch(status.body.result_url, { redirect: 'manual' });
    assert.equal(redirect.status, 302);
    assert.equal(new URL(redirect.headers.get('location')!).origin, testEnvironment().s3.endpoint);
    const image = await fetch(status.body.result_url);
    assert.equal(image.headers.get('content-type'), 'image/jpeg');
    assert.equal((await sharp(await body(image)).metadata()).format, 'jpeg');
  });
});

const streamed: [string, () => AssetStore | undefined, 'redirect' | 'stream'][] = [
  ['an S3 store, ASSET_DELIVERY=stream', () => testS3Store(), 'stream'],
  // The folder store cannot presign: it streams whatever ASSET_DELIVERY says.
  ['the folder store (ASSET_DELIVERY=redirect has nothing to redirect to)', () => undefined, 'redirect'],
];

for (const [name, store, assetDelivery] of streamed) {
  describe(`GET /assets with ${name}: streamed`, () => {
    let stack: Stack;
    let clip: Awaited<ReturnType<typeof storedClip>>;
    before(async () => {
      stack = await startStack({ withWorker: false, store: store(), assetDelivery });
      clip = await storedClip(stack);
    });
    after(() => stack.stop());

    const get = (range?: string, method = 'GET') => fetch(clip.url, { method, redirect: 'manual', headers: range === undefined ? {} : { Range: range } });

    it('answers 200 with the whole body, its length, and Accept-Ranges', async () => {
      const res = await get();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('accept-ranges'), 'bytes');
      assert.equal(res.headers.get('content-type'), 'video/mp4');
      assert.equal(res.headers.get('content-length'), String(clip.bytes.length));
      assert.equal(res.headers.get('cache-control'), 'private, max-age=3600');
      assert.deepEqual(await body(res), clip.bytes);
    });

    it('answers one range with 206 and Content-Range: a-b, a-, -n, and an end past the last byte', async () => {
      const size = clip.bytes.length;
      const cases: [string, number, number][] = [
        ['bytes=0-1023', 0, 1023],
        ['bytes=1048576-', 1048576, size - 1],
        ['bytes=-500', size - 500, size - 1],
        [`bytes=${size - 10}-${size + 1_000_000}`, size - 10, size - 1],
        ['bytes=0-0', 0, 0],
      ];
      for (const [range, start, end] of cases) {
        const res = await get(range);
        assert.equal(res.status, 206, range);
        assert.equal(res.headers.get('content-range'), `bytes ${start}-${end}/${size}`, range);
        assert.equal(res.headers.get('content-length'), String(end - start + 1), range);
        assert.equal(res.headers.get('accept-ranges'), 'bytes', range);
        assert.deepEqual(await body(res), clip.bytes.subarray(start, end + 1), range);
      }
    });

    it('answers 416 with bytes */size for a range past the end', async () => {
      for (const range of [`bytes=${clip.bytes.length}-`, `bytes=${clip.bytes.length + 5}-${clip.bytes.length + 9}`, 'bytes=-0']) {
        const res = await get(range);
        assert.equal(res.status, 416, range);
        assert.equal(res.headers.get('content-range'), `bytes */${clip.bytes.length}`, range);
        assert.equal(((await res.json()) as any).detail.error, 'range_not_satisfiable', range);
      }
    });

    it('ignores malformed, multi-range, other-unit and If-Range requests (200, the whole body)', async () => {
      for (const range of ['bytes=5-2', 'bytes=0-1,5-6', 'items=0-1', 'bytes=abc', 'bytes=-', 'bytes=1-2-3']) {
        const res = await get(range);
        assert.equal(res.status, 200, range);
        assert.equal((await body(res)).length, clip.bytes.length, range);
      }
      const res = await fetch(clip.url, { headers: { Range: 'bytes=0-9', 'If-Range': '"some-etag"' } });
      assert.equal(res.status, 200);
      assert.equal((await body(res)).length, clip.bytes.length);
    });

    it('HEAD answers the same headers without a body, ranges included', async () => {
      const whole = await get(undefined, 'HEAD');
      assert.deepEqual([whole.status, whole.headers.get('content-length'), (await body(whole)).length], [200, String(clip.bytes.length), 0]);
      const part = await get('bytes=10-19', 'HEAD');
      assert.deepEqual([part.status, part.headers.get('content-range'), part.headers.get('content-length')], [206, `bytes 10-19/${clip.bytes.length}`, '10']);
      // The store's streams of HEAD answers are given back: the store keeps serving.
      const after = await get('bytes=0-3');
      assert.deepEqual(await body(after), clip.bytes.subarray(0, 4));
    });

    refusals(() => stack);
  });
}

describe('GET /assets with an S3 store streaming to readers that stall', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false, store: testS3Store({ maxStreams: 60, streamIdleTimeoutMs: 2_000 }), assetDelivery: 'stream' });
  });
  after(() => stack.stop());

  it('keeps uploads and the readiness check going past 60 stalled readers, and drops streams idle at S3', async () => {
    const clip = await storedClip(stack, 64 * 1024 * 1024); // more than the loopback sockets' buffers hold
    // Readers that take the headers, then nothing: each one holds a socket to S3 while its buffers are full.
    const stalled = await Promise.all(Array.from({ length: 60 }, () => new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(clip.url, (res) => { res.pause(); resolve(res); }).on('error', reject);
    })));
    assert.ok(stalled.every((res) => res.statusCode === 200));
    // More than the S3 SDK's default pool of 50: uploads and HeadBucket have a pool of their own.
    const started = Date.now();
    await stack.store.put('inputs/stall-check.jpg', Buffer.from('x'));
    await stack.store.check!(AbortSignal.timeout(1_000));
    assert.ok(Date.now() - started < 1_000, 'not queued behind the stalled readers (they hold their sockets 2 s)');
    // The 60 stalled readers fill the store's 60 streams; a new reader gets one only once the stalled streams are
    // dropped for their idle S3 sockets (2 s here). Without that it would wait for ever.
    const next = await fetch(clip.url);
    assert.equal(next.status, 200);
    assert.equal((await body(next)).length, clip.bytes.length, 'and new readers are served in full');
    for (const res of stalled) res.destroy();
  });
});

describe('parseRange', () => {
  it('reads one byte range, and nothing else', () => {
    assert.deepEqual(parseRange('bytes=0-99'), { start: 0, end: 99 });
    assert.deepEqual(parseRange('bytes=100-'), { start: 100 });
    assert.deepEqual(parseRange('bytes=-5'), { last: 5 });
    assert.deepEqual(parseRange('Bytes= 7-7 '), { start: 7, end: 7 });
    for (const ignored of [undefined, '', 'bytes=', 'bytes=-', 'bytes=9-3', 'bytes=0-1, 3-4', 'items=0-1', 'bytes=a-b', 'bytes=1-2-3', `bytes=${'9'.repeat(20)}-`]) {
      assert.equal(parseRange(ignored), undefined, String(ignored));
    }
  });
});
