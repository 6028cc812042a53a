/**
 * The asset store port's contract, run against both adapters: the folder (`FileAssetStore`) and S3
 * (`S3AssetStore` on the suite's versitygw, a key prefix of its own per run, two keys per list page so that
 * listing crosses pages). Then what only S3 has: the bucket prefix, presigned URLs and the readiness check.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { AssetNotFound, type AssetStore, type ByteRange, FileAssetStore, MAX_PRESIGN_SECONDS, RangeNotSatisfiable } from '../../src/storage/asset-store';
import { S3AssetStore } from '../../src/storage/s3/s3-asset-store';
import { testEnvironment, testS3Store } from '../support/environment';
import { eventually } from '../support/fixtures';

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function keysOf(listing: AsyncIterable<{ key: string }>): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of listing) keys.push(object.key);
  return keys.sort();
}

interface Adapter {
  name: string;
  open(): Promise<{ store: AssetStore; close(): Promise<void> }>;
}

const LIST_PAGE_SIZE = 2;

const adapters: Adapter[] = [
  {
    name: 'FileAssetStore',
    async open() {
      const folder = await mkdtemp(path.join(os.tmpdir(), 'imagery-store-contract-'));
      return { store: new FileAssetStore(folder), close: () => rm(folder, { recursive: true, force: true }) };
    },
  },
  {
    name: 'S3AssetStore',
    async open() {
      const store = testS3Store({ listPageSize: LIST_PAGE_SIZE });
      return { store, close: async () => store.destroy() };
    },
  },
];

for (const adapter of adapters) {
  describe(`asset store contract: ${adapter.name}`, () => {
    let store: AssetStore;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await adapter.open());
    });
    after(() => close());

    const video = randomBytes(256 * 1024 + 17);
    const key = (name: string) => `results/${randomBytes(4).toString('hex')}/${name}`;

    it('reads back what was put, and a second put replaces it', async () => {
      const k = key('photo.jpg');
      await store.put(k, Buffer.from('first'));
      assert.deepEqual(await store.read(k), Buffer.from('first'));
      await store.put(k, video);
      assert.deepEqual(await store.read(k), video);
    });

    it('opens an object as a stream with its size and a media type from its extension', async () => {
      for (const [name, type] of [['a.jpg', 'image/jpeg'], ['a.png', 'image/png'], ['a.webp', 'image/webp'], ['a.mp4', 'video/mp4'], ['a.bin', 'application/octet-stream']]) {
        const k = key(name);
        await store.put(k, video);
        const asset = await store.open(k);
        assert.ok(asset);
        assert.deepEqual([asset.size, asset.contentType, asset.range], [video.length, type, undefined], name);
        assert.deepEqual(await bytesOf(asset.stream), video);
      }
    });

    it('opens byte ranges: a-b, a- and the last n bytes, clamped to the object', async () => {
      const k = key('clip.mp4');
      await store.put(k, video);
      const last = video.length - 1;
      const cases: [ByteRange, number, number][] = [
        [{ start: 0, end: 0 }, 0, 0],
        [{ start: 10, end: 1033 }, 10, 1033],
        [{ start: 100_000 }, 100_000, last],
        [{ last: 500 }, video.length - 500, last],
        [{ start: 5, end: video.length + 1000 }, 5, last],
        [{ last: video.length + 1000 }, 0, last],
        [{ start: last, end: last }, last, last],
      ];
      for (const [range, start, end] of cases) {
        const asset = await store.open(k, range);
        assert.ok(asset);
        assert.deepEqual([asset.size, asset.range], [video.length, { start, end }], JSON.stringify(range));
        assert.deepEqual(await bytesOf(asset.stream), video.subarray(start, end + 1), JSON.stringify(range));
      }
    });

    it('refuses a range past the end with the object\'s size, and an empty object has no range at all', async () => {
      const k = key('clip.mp4');
      await store.put(k, video);
      for (const range of [{ start: video.length }, { start: video.length + 5, end: video.length + 10 }, { last: 0 }]) {
        await assert.rejects(store.open(k, range), (err: unknown) => err instanceof RangeNotSatisfiable && err.size === video.length, JSON.stringify(range));
      }
      const empty = key('empty.jpg');
      await store.put(empty, Buffer.alloc(0));
      const whole = await store.open(empty);
      assert.equal(whole?.size, 0);
      assert.equal((await bytesOf(whole!.stream)).length, 0);
      for (const range of [{ start: 0 }, { last: 1 }]) {
        await assert.rejects(store.open(empty, range), (err: unknown) => err instanceof RangeNotSatisfiable && err.size === 0, JSON.stringify(range));
      }
    });

    it('a missing key: read throws AssetNotFound, open (with or without a range) is undefined, delete is fine', async () => {
      const k = key('never-stored');
      await assert.rejects(store.read(k), (err: unknown) => err instanceof AssetNotFound && err.key === k);
      assert.equal(await store.open(k), undefined);
      // A key that is only the start of other keys (a folder of the file store) is not an object either.
      await store.put(`${k}/inside.jpg`, Buffer.from('x'));
      await assert.rejects(store.read(k), AssetNotFound);
      assert.equal(await store.open(k), undefined);
      assert.equal(await store.open(k, { start: 0, end: 10 }), undefined);
      assert.equal(await store.open(k, { last: 0 }), undefined);
      await store.delete(k);
    });

    it('deletes, twice without complaint', async () => {
      const k = key('doomed.jpg');
      await store.put(k, Buffer.from('bytes'));
      await store.delete(k);
      await store.delete(k);
      assert.equal(await store.open(k), undefined);
      await assert.rejects(store.read(k), AssetNotFound);
    });

    it('lists by key prefix (any start of a key, across pages), with modification times', async () => {
      const run = `inputs/list-${randomBytes(4).toString('hex')}`;
      const before = Date.now() - 5_000;
      const a = Array.from({ length: 5 }, (_, i) => `${run}-a${i}.jpg`);
      const b = [`${run}-b0.jpg`, `${run}-b1.png`];
      const nested = [`${run}/deeper/x.jpg`, `${run}/y.jpg`];
      await Promise.all([...a, ...b, ...nested].map((k) => store.put(k, Buffer.from(k))));

      assert.deepEqual(await keysOf(store.list(`${run}-a`)), a.sort());
      assert.deepEqual(await keysOf(store.list(`${run}-b`)), b.sort());
      assert.deepEqual(await keysOf(store.list(`${run}/`)), nested.sort());
      assert.deepEqual(await keysOf(store.list(run)), [...a, ...b, ...nested].sort());
      assert.deepEqual(await keysOf(store.list(`${run}-nothing`)), []);
      assert.deepEqual(await keysOf(store.list('nowhere/at-all/')), []);
      const everything = await keysOf(store.list(''));
      for (const k of [...a, ...b, ...nested]) assert.ok(everything.includes(k), k);
      for await (const object of store.list(run)) {
        assert.ok(object.lastModified.getTime() > before && object.lastModified.getTime() < Date.now() + 5_000, object.key);
      }
    });

    it('refuses invalid keys and prefixes in every operation', async () => {
      const invalid = ['../escape.jpg', 'inputs/../../x.jpg', '/abs/x.jpg', 'single', 'Inputs/x.jpg', 'inputs/x y.jpg', 'inputs/', 'inputs/.hidden', ''];
      for (const k of invalid) {
        await assert.rejects(store.put(k, Buffer.from('x')), /invalid asset key/, k);
        await assert.rejects(store.read(k), /invalid asset key/, k);
        await assert.rejects(store.open(k), /invalid asset key/, k);
        await assert.rejects(store.open(k, { start: 0 }), /invalid asset key/, k);
        await assert.rejects(store.delete(k), /invalid asset key/, k);
      }
      for (const prefix of ['../', 'inputs/../..', 'Inputs/', 'inputs/x y']) {
        await assert.rejects(store.list(prefix)[Symbol.asyncIterator]().next(), /invalid asset key prefix/, prefix);
      }
    });
  });
}

describe('S3AssetStore beyond the port (the suite\'s versitygw)', () => {
  const stores: S3AssetStore[] = [];
  const s3 = (options: Parameters<typeof testS3Store>[0] = {}) => {
    const store = testS3Store(options);
    stores.push(store);
    return store;
  };
  after(() => stores.forEach((store) => store.destroy()));

  it('keeps its keys under its prefix: invisible to another prefix, visible in full from the bucket root', async () => {
    const prefix = `tenant-${randomBytes(4).toString('hex')}`;
    const mine = s3({ prefix: `${prefix}/one` });
    const theirs = s3({ prefix: `${prefix}/two/` });
    const root = s3({ prefix: '' });
    await mine.put('results/1/a.jpg', Buffer.from('mine'));
    await theirs.put('results/1/a.jpg', Buffer.from('theirs'));
    assert.deepEqual(await mine.read('results/1/a.jpg'), Buffer.from('mine'));
    assert.deepEqual(await theirs.read('results/1/a.jpg'), Buffer.from('theirs'));
    assert.deepEqual(await keysOf(mine.list('')), ['results/1/a.jpg']);
    assert.deepEqual(await keysOf(root.list(`${prefix}/`)), [`${prefix}/one/results/1/a.jpg`, `${prefix}/two/results/1/a.jpg`]);
    await mine.delete('results/1/a.jpg');
    assert.deepEqual(await theirs.read('results/1/a.jpg'), Buffer.from('theirs'));
  });

  it('pages through ListObjectsV2 with the page size it was given', async () => {
    const store = s3({ listPageSize: 3 });
    let lists = 0;
    store.client.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'ListObjectsV2Command') lists++;
      return next(args);
    }, { step: 'initialize', name: 'countLists' });
    const keys = Array.from({ length: 10 }, (_, i) => `inputs/paged-${i}.jpg`);
    await Promise.all(keys.map((k) => store.put(k, Buffer.from(k))));
    assert.deepEqual(await keysOf(store.list('inputs/paged-')), keys.sort());
    assert.equal(lists, 4, '10 keys, 3 a page');
  });

  it('presigns GET and HEAD URLs that work without credentials, and none for a missing key', async () => {
    const store = s3();
    const bytes = randomBytes(70_000);
    await store.put('results/2/clip.mp4', bytes);
    const get = await store.presign('results/2/clip.mp4', 60);
    assert.ok(get?.startsWith(`${testEnvironment().s3.endpoint}/`), get);
    const res = await fetch(get!);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'video/mp4');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
    const ranged = await fetch(get!, { headers: { Range: 'bytes=100-199' } });
    assert.equal(ranged.status, 206);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), bytes.subarray(100, 200));

    const head = await fetch((await store.presign('results/2/clip.mp4', 60, 'HEAD'))!, { method: 'HEAD' });
    assert.deepEqual([head.status, head.headers.get('content-length')], [200, String(bytes.length)]);
    assert.equal((await fetch(get!, { method: 'HEAD' })).status, 403, 'a GET signature does not sign a HEAD');

    assert.equal(await store.presign('results/2/missing.mp4', 60), undefined);
    await assert.rejects(store.presign('results/2/clip.mp4', MAX_PRESIGN_SECONDS + 1), /at most|1 to/);
    await assert.rejects(store.presign('results/2/clip.mp4', 0), /1 to/);
    await assert.rejects(store.presign('../x.mp4', 60), /invalid asset key/);
  });

  it('a presigned URL stops working once it expires', async () => {
    const store = s3();
    await store.put('results/3/a.jpg', Buffer.from('soon gone'));
    const url = (await store.presign('results/3/a.jpg', 1))!;
    assert.equal((await fetch(url)).status, 200);
    const expired = await eventually(() => fetch(url).then((r) => r.status), (status) => status !== 200, 10_000);
    assert.equal(expired, 403);
  });

  it('check() passes for the bucket with the right credentials, fails for wrong ones or a missing bucket', async () => {
    const signal = AbortSignal.timeout(10_000);
    await s3().check(signal);
    await assert.rejects(s3({ credentials: { accessKeyId: testEnvironment().s3.accessKey, secretAccessKey: 'wrong-secret' } }).check(signal));
    await assert.rejects(s3({ bucket: 'no-such-bucket' }).check(signal));
  });
});
