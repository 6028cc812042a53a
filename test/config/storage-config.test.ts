/**
 * The storage settings: the folder by default; `ASSET_STORE=s3` needs a bucket (the service refuses to start
 * without one) and is then wired by the composition root, which the real service shows on the suite's versitygw.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { UrlSigner } from '../../src/storage/signed-urls';
import { freePort } from '../../ops/dev-server';
import { testEnvironment, testS3Store } from '../support/environment';
import { withEnv } from '../support/fixtures';
import { startServiceProcess } from '../../ops/cluster/service-process';

const UNSET = {
  ASSET_STORE: '', ASSET_DELIVERY: '', S3_BUCKET: '', S3_ENDPOINT: '', S3_REGION: '', S3_FORCE_PATH_STYLE: '', S3_ACCESS_KEY_ID: '',
  S3_SECRET_ACCESS_KEY: '', S3_PREFIX: '', S3_PRESIGN_SECONDS: '',
};
const configWith = (env: Record<string, string>) => withEnv({ ...UNSET, ...env }, () => loadConfig());

describe('storage configuration', () => {
  it('defaults to the folder, redirects, us-east-1, 300 s presigned URLs and the default credential chain', () => {
    const config = configWith({});
    assert.deepEqual(
      [config.assetStore, config.assetDelivery, config.s3Region, config.s3PresignSeconds, config.s3ForcePathStyle, config.s3Prefix, config.s3AccessKeyId, config.s3Bucket],
      ['file', 'redirect', 'us-east-1', 300, false, '', undefined, undefined],
    );
  });

  it('takes S3 settings: path style by default with an endpoint, a normalised prefix, both keys', () => {
    const config = configWith({
      ASSET_STORE: 's3', S3_BUCKET: 'media', S3_ENDPOINT: 'https://account.r2.cloudflarestorage.com/', S3_REGION: 'auto',
      S3_ACCESS_KEY_ID: 'id', S3_SECRET_ACCESS_KEY: 'secret', S3_PREFIX: '/imagery/prod/', ASSET_DELIVERY: 'stream', S3_PRESIGN_SECONDS: '604800',
    });
    assert.deepEqual(
      [config.s3Bucket, config.s3Endpoint, config.s3Region, config.s3ForcePathStyle, config.s3Prefix, config.assetDelivery, config.s3PresignSeconds],
      ['media', 'https://account.r2.cloudflarestorage.com', 'auto', true, 'imagery/prod/', 'stream', 604_800],
    );
    assert.equal(configWith({ S3_ENDPOINT: 'http://minio:9000', S3_FORCE_PATH_STYLE: 'false' }).s3ForcePathStyle, false);
    assert.equal(configWith({ S3_FORCE_PATH_STYLE: 'true' }).s3ForcePathStyle, true);
  });

  it('refuses what cannot work, naming the variable', () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ ASSET_STORE: 's3' }, /ASSET_STORE=s3 needs S3_BUCKET/],
      [{ ASSET_STORE: 'gcs' }, /ASSET_STORE must be one of file, s3/],
      [{ ASSET_DELIVERY: 'proxy' }, /ASSET_DELIVERY must be one of redirect, stream/],
      [{ S3_PRESIGN_SECONDS: '604801' }, /S3_PRESIGN_SECONDS must be 1 to 604800/],
      [{ S3_PRESIGN_SECONDS: '0' }, /S3_PRESIGN_SECONDS must be 1 to 604800/],
      [{ S3_PRESIGN_SECONDS: '1.5' }, /S3_PRESIGN_SECONDS must be a non-negative integer/],
      [{ S3_ACCESS_KEY_ID: 'id' }, /S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/],
      [{ S3_SECRET_ACCESS_KEY: 'secret' }, /S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/],
      [{ S3_ENDPOINT: 'minio:9000' }, /S3_ENDPOINT must be an http\(s\) URL/],
      [{ S3_FORCE_PATH_STYLE: 'yes please' }, /S3_FORCE_PATH_STYLE must be true or false/],
      [{ S3_PREFIX: 'a/../b' }, /S3_PREFIX must be/],
      [{ S3_PREFIX: 'a//b' }, /S3_PREFIX must be/],
    ];
    for (const [env, why] of refused) assert.throws(() => configWith(env), why, JSON.stringify(env));
  });

  describe('the service process', function () {
    this.timeout(60_000);
    const env = () => ({
      DATABASE_URL: testEnvironment().databaseUrl, TEMPORAL_ADDRESS: testEnvironment().temporalAddress,
      TEMPORAL_TASK_QUEUE: `storage-${randomUUID()}`, DATA_DIR: path.join(os.tmpdir(), `imagery-storage-${randomUUID()}`),
    });

    it('refuses to start with ASSET_STORE=s3 and no S3_BUCKET', async () => {
      const outcome = await startServiceProcess('api', { ...env(), ...UNSET, PORT: '0', ASSET_STORE: 's3' })
        .then(async (service) => (await service.kill('SIGTERM'), 'started'), (err: Error) => err.message);
      assert.match(outcome, /ASSET_STORE=s3 needs S3_BUCKET/);
    });

    it('with ASSET_STORE=s3 is ready against the bucket and redirects its signed links to presigned ones', async () => {
      const { s3 } = testEnvironment();
      const prefix = `service-${randomUUID()}/`;
      const port = await freePort();
      const signingSecret = randomBytes(32).toString('hex');
      const service = await startServiceProcess('api', {
        ...env(), ...UNSET, PORT: String(port), ASSET_SIGNING_SECRET: signingSecret,
        ASSET_STORE: 's3', S3_BUCKET: s3.bucket, S3_ENDPOINT: s3.endpoint, S3_ACCESS_KEY_ID: s3.accessKey, S3_SECRET_ACCESS_KEY: s3.secretKey,
        S3_PREFIX: prefix, S3_PRESIGN_SECONDS: '90',
      });
      const store = testS3Store({ prefix });
      try {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        assert.deepEqual([ready.status, await ready.json()], [200, { status: 'ready', checks: { database: 'ok', temporal: 'ok', storage: 'ok' } }]);
        const key = `results/1/${randomBytes(16).toString('hex')}.jpg`;
        await store.put(key, Buffer.from('stored by someone else'));
        const link = new UrlSigner(signingSecret, `http://127.0.0.1:${port}`).url(key).url;
        const redirect = await fetch(link, { redirect: 'manual' });
        assert.equal(redirect.status, 302);
        const location = new URL(redirect.headers.get('location')!);
        assert.equal(location.pathname, `/${s3.bucket}/${prefix}${key}`);
        assert.equal(location.searchParams.get('X-Amz-Expires'), '90');
        assert.equal(await (await fetch(link)).text(), 'stored by someone else');
      } finally {
        store.destroy();
        await service.kill('SIGTERM');
      }
    });
  });
});
