/**
 * Service secrets: a configured secret that is short or a known placeholder stops the API and the worker with a
 * clear message; an unset one is generated once in DATA_DIR and shared.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { loadSecret, SecretBox } from '../../src/secrets';
import { testEnvironment } from '../support/environment';
import { withEnv } from '../support/fixtures';
import { startServiceProcess } from '../../ops/cluster/service-process';

describe('service secrets', () => {
  const strong = randomBytes(32).toString('hex');

  it('names from a secret: the same label the same 128 bits under one secret, unrelated under another or for another label', () => {
    const box = new SecretBox('a-service-secret-of-enough-length-0001');
    const name = box.nameFor('result\n7\nseed');
    assert.match(name, /^[0-9a-f]{32}$/);
    assert.equal(new SecretBox('a-service-secret-of-enough-length-0001').nameFor('result\n7\nseed'), name, 'every process computes the same');
    assert.notEqual(new SecretBox('another-service-secret-of-enough-len').nameFor('result\n7\nseed'), name);
    assert.notEqual(box.nameFor('result\n8\nseed'), name);
    assert.notEqual(box.nameFor('result\n7\nseed2'), name);
  });

  it('refuses configured secrets that are short or placeholders, naming the variable', () => {
    const weak: [string, RegExp][] = [
      ['change-me-asset-signing-secret', /shorter than 32/], // the old docker-compose default
      ['change-me-0123456789abcdef0123456789abcdef', /"changeme"/],
      ['CHANGEME_PLEASE_9f8e7d6c5b4a39281706f5e4d3c2b1a0', /"changeme"/],
      ['my-super-secret-signing-key-for-production-use', /"secret"/],
      ['Password1234567890Password1234567890', /"password"/],
      ['example-0123456789abcdef0123456789abcdef', /"example"/],
      ['a'.repeat(64), /distinct characters/],
    ];
    for (const name of ['ASSET_SIGNING_SECRET', 'SECRETS_KEY']) {
      for (const [value, why] of weak) {
        assert.throws(() => withEnv({ [name]: value }, () => loadConfig()), (err: Error) => {
          assert.match(err.message, new RegExp(`^${name} `));
          assert.match(err.message, why);
          return true;
        }, value);
      }
    }
  });

  it('accepts 32+ random characters, and leaves an unset secret to DATA_DIR', () => {
    const config = withEnv({ ASSET_SIGNING_SECRET: strong, SECRETS_KEY: randomUUID() }, () => loadConfig());
    assert.equal(config.assetSigningSecret, strong);
    assert.equal(withEnv({ ASSET_SIGNING_SECRET: '', SECRETS_KEY: '' }, () => loadConfig()).secretsKey, undefined);
  });

  it('generates an unset secret once in DATA_DIR and refuses a weak kept one', () => {
    const dir = path.join(os.tmpdir(), `imagery-secrets-${randomUUID()}`);
    const first = loadSecret(undefined, dir, 'secrets-key');
    assert.match(first, /^[0-9a-f]{64}$/);
    assert.equal(loadSecret(undefined, dir, 'secrets-key'), first);
    assert.equal(readFileSync(path.join(dir, 'secrets-key'), 'utf8'), first);

    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'empty'), ''); // e.g. a file another process had created but not yet written
    assert.throws(() => loadSecret(undefined, dir, 'empty'), /empty is shorter than 32/);
  });

  it('the API and the worker refuse to start with a placeholder secret', async function () {
    this.timeout(60_000);
    const env = {
      DATABASE_URL: testEnvironment().databaseUrl, TEMPORAL_ADDRESS: testEnvironment().temporalAddress,
      TEMPORAL_TASK_QUEUE: `secrets-${randomUUID()}`, DATA_DIR: path.join(os.tmpdir(), `imagery-secrets-${randomUUID()}`), PORT: '0',
    };
    const outcome = (mode: 'api' | 'worker', extra: Record<string, string>) => startServiceProcess(mode, { ...env, ...extra })
      .then(async (service) => {
        await service.kill('SIGTERM');
        return 'started';
      }, (err: Error) => err.message);
    assert.match(await outcome('api', { ASSET_SIGNING_SECRET: 'change-me-asset-signing-secret' }), /ASSET_SIGNING_SECRET is shorter than 32 characters/);
    assert.match(await outcome('worker', { SECRETS_KEY: 'change-me-secrets-key' }), /SECRETS_KEY is shorter than 32 characters/);
    assert.match(await outcome('worker', { SECRETS_KEY: `changeme-${strong}` }), /SECRETS_KEY contains \W*changeme/);
  });
});
