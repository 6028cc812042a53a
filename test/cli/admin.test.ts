import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { DataSource } from 'typeorm';
import { openDatabase } from '../../src/db/data-source';
import { readBalance } from '../../src/billing/sparks';
import { testEnvironment } from '../support/environment';
import { apiClient, assertMoneyConsistent, V1 } from '../support/fixtures';
import { dashboardBrowser } from '../support/dashboard-client';
import { Stack, startStack } from '../support/stack';

/** The repository root (this file runs from dist/test/cli). */
const ROOT = path.resolve(__dirname, '../../..');
const run = promisify(execFile);

/** Runs the operator CLI the way docs/operations.md shows it. */
async function npmAdmin(...args: string[]) {
  return run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: testEnvironment().databaseUrl } });
}

async function admin(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run('node', [path.join(ROOT, 'dist/app/cli/admin.js'), ...args], { env: { ...process.env, DATABASE_URL: testEnvironment().databaseUrl } });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

describe('operator CLI', function () {
  this.timeout(30_000);
  let db: DataSource;
  let stack: Stack;
  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false });
    stack = await startStack({ withWorker: false });
  });
  after(async () => {
    await stack.stop();
    await db.destroy();
  });

  it('account:create --json prints {account_id, api_key}, and the key works on the API', async () => {
    const { stdout } = await npmAdmin('account:create', '--name', 'Acme', '--sparks', '20', '--json');
    const created = JSON.parse(stdout);
    assert.ok(Number.isInteger(created.account_id));
    assert.match(created.api_key, /^ak_[A-Za-z0-9]{32,}$/);
    const balance = await apiClient(stack.baseUrl, created.api_key)('GET', `${V1}/balance`);
    assert.deepEqual(balance.body, { balance: 20, available: 20, holds: 0 });
    const [stored] = await db.query('SELECT key_hash FROM api_keys WHERE account_id = $1', [created.account_id]);
    assert.notEqual(stored.key_hash, created.api_key, 'only a hash is stored');
    assert.ok(!stored.key_hash.includes(created.api_key.slice(3)));
  });

  it('key:create, key:list and key:revoke, with at most 10 active keys', async () => {
    const account = JSON.parse((await admin('account:create', '--name', 'Keys', '--sparks', '0', '--json')).stdout);
    const legacy = JSON.parse((await admin('key:create', '--account', String(account.account_id), '--name', 'legacy', '--grouping', 'legacy_per_request', '--json')).stdout);
    assert.deepEqual(Object.keys(legacy).sort(), ['api_key', 'key_id']);
    const [row] = await db.query('SELECT name, default_grouping FROM api_keys WHERE id = $1', [legacy.key_id]);
    assert.deepEqual([row.name, row.default_grouping], ['legacy', 'legacy_per_request']);

    for (let i = 0; i < 8; i++) assert.equal((await admin('key:create', '--account', String(account.account_id), '--json')).code, 0);
    const eleventh = await admin('key:create', '--account', String(account.account_id), '--json');
    assert.equal(eleventh.code, 1);
    assert.match(eleventh.stderr, /10 active keys/);

    assert.equal((await admin('key:revoke', '--key-id', String(legacy.key_id))).code, 0);
    assert.equal((await apiClient(stack.baseUrl, legacy.api_key)('GET', `${V1}/balance`)).status, 401);
    assert.equal((await admin('key:create', '--account', String(account.account_id), '--json')).code, 0, 'a revoked key frees a slot');

    const list = JSON.parse((await admin('key:list', '--account', String(account.account_id), '--json')).stdout);
    assert.equal(list.keys.length, 11);
    assert.equal(list.keys.filter((k: { revoked_at: string | null }) => k.revoked_at).length, 1);
    assert.ok(list.keys.every((k: { prefix: string }) => k.prefix.startsWith('ak_') && k.prefix.length === 8));
  });

  it('key:create --sandbox --json prints a test key of the account\'s sandbox, its 1,000 sparks apart from the live ones', async () => {
    const account = JSON.parse((await npmAdmin('account:create', '--name', 'Sandboxed', '--sparks', '5', '--json')).stdout);
    const { stdout } = await npmAdmin('key:create', '--account', String(account.account_id), '--sandbox', '--json');
    const created = JSON.parse(stdout);
    assert.deepEqual(Object.keys(created).sort(), ['api_key', 'key_id']);
    assert.match(created.api_key, /^ak_test_[A-Za-z0-9]{40}$/);
    const balance = (key: string) => apiClient(stack.baseUrl, key)('GET', `${V1}/balance`).then((r) => r.body);
    assert.equal((await balance(created.api_key)).balance, 1000);
    assert.equal((await balance(account.api_key)).balance, 5);
    const second = JSON.parse((await admin('key:create', '--account', String(account.account_id), '--sandbox', '--json')).stdout);
    const [sandboxes] = await db.query('SELECT count(DISTINCT account_id)::int AS n FROM api_keys WHERE id = ANY($1)', [[created.key_id, second.key_id]]);
    assert.equal(sandboxes.n, 1, 'one sandbox per account');
    const list = JSON.parse((await admin('key:list', '--account', String(account.account_id), '--json')).stdout);
    assert.deepEqual(list.keys.map((k: { sandbox: boolean }) => k.sandbox), [false, true, true]);
    const [sandbox] = await db.query('SELECT account_id FROM api_keys WHERE id = $1', [created.key_id]);
    assert.equal((await admin('key:create', '--account', String(sandbox.account_id), '--json')).code, 1, 'a sandbox has no keys of its own making');
  });

  it('sparks:grant adds to the ledger; pricing:set changes what /pricing answers', async () => {
    const account = JSON.parse((await admin('account:create', '--name', 'Grant', '--sparks', '5', '--json')).stdout);
    assert.equal((await admin('sparks:grant', '--account', String(account.account_id), '--amount', '7')).code, 0);
    assert.deepEqual(await readBalance(db, account.account_id), { balance: 12, holds: 0, available: 12 });
    await assertMoneyConsistent(db, account.account_id);

    const before = (await apiClient(stack.baseUrl, account.api_key)('GET', `${V1}/pricing`)).body;
    try {
      const set = await admin('pricing:set', '--generation', '6', '--improvement', '4', '--video-5sec', '11', '--video-10sec', '19', '--json');
      assert.deepEqual(JSON.parse(set.stdout), { generation: 6, improvement: 4, video_5sec: 11, video_10sec: 19 });
      assert.deepEqual((await apiClient(stack.baseUrl, account.api_key)('GET', `${V1}/pricing`)).body, { generation: 6, improvement: 4, video_5sec: 11, video_10sec: 19 });
    } finally {
      await admin('pricing:set', '--generation', String(before.generation), '--improvement', String(before.improvement),
        '--video-5sec', String(before.video_5sec), '--video-10sec', String(before.video_10sec));
    }
  });

  it('refuses bad usage with exit code 2 and unknown ids with exit code 1', async () => {
    assert.equal((await admin('account:create', '--sparks', '5')).code, 2);
    assert.equal((await admin('account:create', '--name', 'x', '--sparks', '-5')).code, 2);
    assert.equal((await admin('key:create', '--account', '1', '--grouping', 'nope')).code, 2);
    assert.equal((await admin('no:such')).code, 2);
    assert.equal((await admin('key:revoke', '--key-id', '99999999')).code, 1);
    assert.equal((await admin('sparks:grant', '--account', '99999999', '--amount', '1')).code, 1);
    assert.equal((await admin('user:invite', '--account', '99999999', '--email', 'x@example.com')).code, 1);
    assert.equal((await admin('user:invite', '--account', '1', '--email', 'not an email')).code, 2);
    assert.equal((await admin('user:invite', '--account', '1', '--email', 'x@example.com', '--role', 'admin')).code, 2);
  });

  it('user:invite --json prints {user_id, link}; the link signs the first owner in to the dashboard, once', async () => {
    const account = JSON.parse((await npmAdmin('account:create', '--name', 'Dashboard', '--sparks', '5', '--json')).stdout);
    const email = `owner-${Date.now()}@example.com`;
    const { stdout } = await npmAdmin('user:invite', '--account', String(account.account_id), '--email', email, '--role', 'owner', '--json');
    const invited = JSON.parse(stdout);
    assert.deepEqual(Object.keys(invited).sort(), ['link', 'user_id']);
    const link = new URL(invited.link);
    assert.equal(link.pathname, '/dashboard/');
    const token = /^#link=([A-Za-z0-9_-]{43})$/.exec(link.hash)?.[1];
    assert.ok(token, invited.link);
    const browser = dashboardBrowser(stack.baseUrl);
    const redeemed = await browser.call('POST', '/links/redeem', { token, password: 'the first owner password' });
    assert.deepEqual([redeemed.status, redeemed.body.user], [200, { id: invited.user_id, email, role: 'owner', account_id: account.account_id }]);
    assert.equal((await dashboardBrowser(stack.baseUrl).call('POST', '/links/redeem', { token, password: 'someone else password' })).status, 400);
    // Invited again once signed up: refused (exit 1), the user as it was.
    const again = await admin('user:invite', '--account', String(account.account_id), '--email', email.toUpperCase());
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already has a user/);
  });
});
