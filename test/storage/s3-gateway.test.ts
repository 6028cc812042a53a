/**
 * The local S3 server of tests and evaluation: started over a folder it creates, with the bucket made, and started
 * again over the same folder (as `npm run cluster` restarts it) with the objects still there.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { S3AssetStore } from '../../src/storage/s3/s3-asset-store';
import { startS3Gateway } from '../../ops/s3-gateway';
import { freePort } from '../../ops/dev-server';

describe('startS3Gateway', function () {
  this.timeout(60_000);
  let root: string;
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'imagery-gateway-test-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('creates folder and bucket, keeps objects across a restart, and stops', async () => {
    const options = {
      toolsDir: loadConfig().toolsDir, dir: path.join(root, 'data'), accessKey: 'gateway-test', secretKey: randomBytes(20).toString('hex'),
      bucket: 'cluster-assets', logFile: path.join(root, 'versitygw.log'),
    };
    const store = (endpoint: string) => new S3AssetStore({
      bucket: options.bucket, endpoint, region: 'us-east-1', forcePathStyle: true,
      credentials: { accessKeyId: options.accessKey, secretAccessKey: options.secretKey },
    });

    const first = await startS3Gateway({ ...options, port: await freePort() });
    assert.match(first.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(existsSync(path.join(options.dir, options.bucket)), 'a bucket is a folder of the posix backend');
    const before = store(first.endpoint);
    await before.put('results/1/a.jpg', Buffer.from('kept'));
    before.destroy();
    await first.stop();
    assert.equal((await fetch(`${first.endpoint}/health`).catch(() => undefined))?.status, undefined, 'stopped: nothing answers');

    const second = await startS3Gateway({ ...options, port: await freePort() });
    try {
      const after = store(second.endpoint);
      assert.deepEqual(await after.read('results/1/a.jpg'), Buffer.from('kept'));
      after.destroy();
    } finally {
      await second.stop();
    }
  });
});
