import assert from 'node:assert/strict';
import { mkdtemp, rm, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { openDatabase } from '../../src/db/data-source';
import { FileAssetStore } from '../../src/storage/asset-store';
import { INPUT_GRACE_MS, purgeUnreferencedInputs } from '../../src/housekeeping/purge-inputs';
import { testEnvironment } from '../support/environment';
import { newAccount, placeAction } from '../support/fixtures';

describe('purge of unreferenced inputs (real Postgres, own store folder)', () => {
  let db: DataSource;
  let folder: string;
  let store: FileAssetStore;
  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false });
    folder = await mkdtemp(path.join(os.tmpdir(), 'imagery-purge-test-'));
    store = new FileAssetStore(folder);
  });
  after(async () => {
    await db.destroy();
    await rm(folder, { recursive: true, force: true });
  });

  const run = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const key = (name: string) => `inputs/${run}-${name}.jpg`;
  const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000);

  async function stored(name: string, writtenAt = new Date()): Promise<string> {
    await store.put(key(name), Buffer.from(name));
    await utimes(path.join(folder, key(name)), writtenAt, writtenAt);
    return key(name);
  }

  async function upload(accountId: number, inputKey: string, expiresAt: Date): Promise<string> {
    const id = `upl_purge-${run}-${Math.random().toString(36).slice(2)}`;
    await db.query(`INSERT INTO uploads (id, account_id, input_key, format, width, height, expires_at) VALUES ($1, $2, $3, 'jpeg', 10, 10, $4)`,
      [id, accountId, inputKey, expiresAt]);
    return id;
  }

  it('deletes old inputs nothing names, keeps those an action or a live upload names and fresh ones, and forgets long-expired uploads', async () => {
    assert.equal(INPUT_GRACE_MS, 3600_000, 'the documented grace period');
    const { accountId } = await newAccount(db, 20);
    const old = hoursAgo(2);
    const orphan = await stored('orphan', old);
    const photoInput = await stored('photo-input', old);
    const cardReference = await stored('card-reference', old);
    const videoFinalFrame = await stored('video-final-frame', old);
    const liveUploadInput = await stored('live-upload', old);
    const expiredUploadInput = await stored('expired-upload', old);
    const fresh = await stored('fresh');
    const justInsideGrace = await stored('inside-grace', new Date(Date.now() - INPUT_GRACE_MS + 60_000));
    await store.put(`results/${run}/kept.jpg`, Buffer.from('a result'));
    await utimes(path.join(folder, `results/${run}/kept.jpg`), old, old);

    await placeAction(db, accountId, { inputs: [photoInput] });
    await placeAction(db, accountId, { product: 'card', inputs: [await stored('card-input', old)], params: { designReference: cardReference } });
    await placeAction(db, accountId, { product: 'video', params: { input: await stored('video-input', old), finalFrame: videoFinalFrame } });
    const live = await upload(accountId, liveUploadInput, new Date(Date.now() + 600_000));
    const recentlyExpired = await upload(accountId, expiredUploadInput, hoursAgo(0.5));
    const longExpired = await upload(accountId, orphan, hoursAgo(2));

    const purged = await purgeUnreferencedInputs(db, store);

    const remaining = new Set<string>();
    for await (const object of store.list('')) remaining.add(object.key);
    for (const gone of [orphan, expiredUploadInput]) assert.ok(!remaining.has(gone), `${gone} is deleted`);
    for (const kept of [photoInput, cardReference, videoFinalFrame, liveUploadInput, fresh, justInsideGrace, key('card-input'), key('video-input'), `results/${run}/kept.jpg`]) {
      assert.ok(remaining.has(kept), `${kept} is kept`);
    }
    assert.equal(purged.inputs, 2);
    const uploads = (await db.query('SELECT id FROM uploads WHERE id = ANY($1)', [[live, recentlyExpired, longExpired]])).map((u: { id: string }) => u.id);
    assert.deepEqual(uploads.sort(), [live, recentlyExpired].sort(), 'an upload expired within the grace period still answers upload_expired');
    assert.ok(purged.uploads >= 1);

    assert.deepEqual(await purgeUnreferencedInputs(db, store), { uploads: 0, inputs: 0 }, 'a second run finds nothing more');
  });

  it('lists by prefix with last-modified times, and deletes idempotently', async () => {
    const a = await stored('listed-a', hoursAgo(3));
    await stored('listed-b');
    const listed = [];
    for await (const object of store.list(`inputs/${run}-listed-`)) listed.push(object);
    assert.deepEqual(listed.map((o) => o.key).sort(), [a, key('listed-b')]);
    assert.ok(Math.abs(listed.find((o) => o.key === a)!.lastModified.getTime() - hoursAgo(3).getTime()) < 5_000);
    await store.delete(a);
    await store.delete(a);
    assert.equal(await store.open(a), undefined);
    await assert.rejects(store.list('../outside')[Symbol.asyncIterator]().next(), /invalid asset key prefix/);
  });
});
