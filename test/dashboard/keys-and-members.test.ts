/**
 * Keys and members through the dashboard's routes: a key's secret in exactly one answer, the limit of 10 active
 * keys, rename and grouping, revocation refused by the API at once and ending the key's live streams; members
 * managed by owners only; nothing of another account reachable by any id.
 */
import assert from 'node:assert/strict';
import { MAX_ACTIVE_KEYS } from '../../src/accounts/accounts';
import { routeGroups } from '../../api/app';
import { DASHBOARD_API, signedInUser } from '../support/dashboard-client';
import { apiClient, placeAction, V1 } from '../support/fixtures';
import { openSse } from '../support/sse-client';
import { Stack, startStack } from '../support/stack';

describe('dashboard keys and members', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false });
  });
  after(() => stack.stop());

  it('creates a key whose secret is in that answer only; it works on the API, and its use shows as last used', async () => {
    const { browser } = await signedInUser(stack.baseUrl, stack.db);
    const created = await browser.call('POST', '/keys', { name: '<img src=x onerror=alert(1)>', default_grouping: 'legacy_per_request' });
    assert.equal(created.status, 201);
    assert.match(created.body.api_key, /^ak_[A-Za-z0-9]{40}$/);
    assert.equal(created.body.key.prefix, created.body.api_key.slice(0, 8));
    assert.equal(created.body.key.name, '<img src=x onerror=alert(1)>'); // stored as given; shown as text by the page
    assert.equal(created.body.key.last_used_at, null);

    assert.equal((await apiClient(stack.baseUrl, created.body.api_key)('GET', `${V1}/balance`)).status, 200);
    const listed = await browser.call('GET', '/keys');
    const key = listed.body.keys.find((k: { id: number }) => k.id === created.body.key.id);
    assert.ok(key.last_used_at, 'last used after a request');
    assert.equal(key.default_grouping, 'legacy_per_request');
    assert.ok(!JSON.stringify(listed.body).includes(created.body.api_key.slice(8)), 'the secret appears in no later answer');
  });

  it('makes sandbox keys beside live ones, on the account\'s sandbox, managed as its keys; another account\'s user reaches none', async () => {
    const owner = await signedInUser(stack.baseUrl, stack.db);
    assert.equal((await owner.browser.call('GET', '/keys')).body.sandbox, null, 'no sandbox before its first key');
    const created = await owner.browser.call('POST', '/keys', { name: 'drills', sandbox: true });
    assert.equal(created.status, 201);
    assert.match(created.body.api_key, /^ak_test_[A-Za-z0-9]{40}$/);
    assert.equal(created.body.key.sandbox, true);
    const listed = (await owner.browser.call('GET', '/keys')).body;
    assert.deepEqual(listed.keys.map((k: { sandbox: boolean }) => k.sandbox).sort(), [false, true]);
    assert.deepEqual(listed.sandbox, { balance: 1000, available: 1000, holds: 0 });
    const api = apiClient(stack.baseUrl, created.body.api_key);
    assert.equal((await api('GET', `${V1}/balance`)).body.balance, 1000);

    const member = await signedInUser(stack.baseUrl, stack.db, { accountId: owner.accountId, role: 'member' });
    assert.equal((await member.browser.call('PATCH', `/keys/${created.body.key.id}`, { name: 'renamed' })).body.name, 'renamed');
    const stranger = await signedInUser(stack.baseUrl, stack.db);
    for (const [method, path, body] of [['PATCH', '', { name: 'x' }], ['POST', '/revoke', undefined], ['POST', '/spend-limit', { monthly_spend_limit: 1 }]] as const) {
      assert.equal((await stranger.browser.call(method, `/keys/${created.body.key.id}${path}`, body)).status, 404, `${method} ${path}`);
    }
    assert.ok((await member.browser.call('POST', `/keys/${created.body.key.id}/revoke`)).body.revoked_at);
    assert.equal((await api('GET', `${V1}/balance`)).status, 401, 'revoked at once');
  });

  it('lets an owner set and remove a key\'s monthly spend limit, shown with what it spent this month; a member may not', async () => {
    const owner = await signedInUser(stack.baseUrl, stack.db);
    const [key] = (await owner.browser.call('GET', '/keys')).body.keys;
    assert.deepEqual([key.monthly_spend_limit, key.spent_this_month], [null, 0]);
    const set = await owner.browser.call('POST', `/keys/${key.id}/spend-limit`, { monthly_spend_limit: 40 });
    assert.deepEqual([set.status, set.body.monthly_spend_limit], [200, 40]);
    assert.equal((await owner.browser.call('POST', `/keys/${key.id}/spend-limit`, { monthly_spend_limit: -1 })).status, 422);
    assert.equal((await owner.browser.call('POST', `/keys/${key.id}/spend-limit`, {})).status, 422);
    const member = await signedInUser(stack.baseUrl, stack.db, { accountId: owner.accountId, role: 'member' });
    const refused = await member.browser.call('POST', `/keys/${key.id}/spend-limit`, { monthly_spend_limit: null });
    assert.deepEqual([refused.status, refused.body.detail.error], [403, 'forbidden']);
    const stranger = await signedInUser(stack.baseUrl, stack.db);
    assert.equal((await stranger.browser.call('POST', `/keys/${key.id}/spend-limit`, { monthly_spend_limit: null })).status, 404);
    const made = await member.browser.call('POST', '/keys', { name: 'member made' });
    assert.equal(made.body.key.monthly_spend_limit, 40, 'a member\'s new key is no way around the owners\' limit');
    assert.equal((await stack.db.query('SELECT monthly_spend_limit FROM api_keys WHERE id = $1', [made.body.key.id]))[0].monthly_spend_limit, 40);
    assert.equal((await owner.browser.call('POST', '/keys', { name: 'owner made' })).body.key.monthly_spend_limit, null, 'an owner\'s is as they set it');
    const removed = await owner.browser.call('POST', `/keys/${key.id}/spend-limit`, { monthly_spend_limit: null });
    assert.deepEqual([removed.status, removed.body.monthly_spend_limit], [200, null]);
  });

  it(`refuses an ${MAX_ACTIVE_KEYS + 1}th active key with 422, and takes one again after a revocation`, async () => {
    const { browser } = await signedInUser(stack.baseUrl, stack.db); // the account has its default key
    for (let i = 1; i < MAX_ACTIVE_KEYS; i++) assert.equal((await browser.call('POST', '/keys', { name: `key ${i}` })).status, 201);
    const over = await browser.call('POST', '/keys', { name: 'one too many' });
    assert.equal(over.status, 422);
    assert.match(over.body.detail[0].msg, /already has 10 active keys; revoke one first/);
    const [first] = (await browser.call('GET', '/keys')).body.keys;
    assert.equal((await browser.call('POST', `/keys/${first.id}/revoke`)).status, 200);
    assert.equal((await browser.call('POST', '/keys', { name: 'in its place' })).status, 201);
  });

  it('renames a key and switches its grouping; a revoked key is refused by the API and its live streams end', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    const [key] = (await browser.call('GET', '/keys')).body.keys;
    const renamed = await browser.call('PATCH', `/keys/${key.id}`, { name: 'production', default_grouping: 'legacy_per_request' });
    assert.deepEqual([renamed.status, renamed.body.name, renamed.body.default_grouping], [200, 'production', 'legacy_per_request']);
    assert.equal((await browser.call('PATCH', `/keys/${key.id}`, {})).status, 422);

    const actionId = await placeAction(stack.db, (await stack.db.query('SELECT account_id FROM api_keys WHERE id = $1', [key.id]))[0].account_id);
    const stream = await openSse(`${stack.baseUrl}${V1}/status/${actionId}/events`, { Authorization: `Bearer ${apiKey}` });
    assert.equal(stream.status, 200);
    const revoked = await browser.call('POST', `/keys/${key.id}/revoke`);
    assert.ok(revoked.body.revoked_at);
    await stream.ended; // ended by the revocation (the suite's timeout bounds it; the stream's lifetime is an hour)
    const refused = await apiClient(stack.baseUrl, apiKey)('GET', `${V1}/balance`);
    assert.deepEqual([refused.status, refused.body.detail.error], [401, 'invalid_api_key']);
    assert.equal((await browser.call('PATCH', `/keys/${key.id}`, { name: 'again' })).body.name, 'production', 'a revoked key stays as it was');
  });

  it('a member of account A reaches nothing of account B by any id, in paths or bodies', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db, { role: 'member' });
    const b = await signedInUser(stack.baseUrl, stack.db);
    const [bKey] = (await b.browser.call('GET', '/keys')).body.keys;
    const { body: bMembers } = await b.browser.call('GET', '/members');
    for (const [method, path, body] of [
      ['PATCH', `/keys/${bKey.id}`, { name: 'mine now' }],
      ['POST', `/keys/${bKey.id}/revoke`, undefined],
    ] as const) {
      const answer = await a.browser.call(method, path, body);
      assert.deepEqual([answer.status, answer.body.detail.error], [404, 'not_found'], `${method} ${path}`);
    }
    const aKeys = (await a.browser.call('GET', '/keys')).body.keys;
    assert.ok(aKeys.every((k: { id: number }) => k.id !== bKey.id));
    const after = (await b.browser.call('GET', '/keys')).body.keys.find((k: { id: number }) => k.id === bKey.id);
    assert.deepEqual([after.name, after.revoked_at], [bKey.name, null]);
    // Members: A is a member (403 before any id is looked at); B's owner cannot reach A's users either.
    const aOwner = await signedInUser(stack.baseUrl, stack.db, { accountId: a.accountId });
    const [bUser] = bMembers.members;
    for (const [method, path, body] of [['PATCH', `/members/${bUser.id}`, { role: 'member' }], ['DELETE', `/members/${bUser.id}`, undefined]] as const) {
      assert.equal((await aOwner.browser.call(method, path, body)).status, 404, `an owner of A: ${method} ${path}`);
      assert.equal((await a.browser.call(method, path, body)).status, 403, `a member of A: ${method} ${path}`);
    }
    assert.equal((await b.browser.call('GET', '/session')).status, 200, 'B is untouched');
    // Every dashboard route with an id is in a matrix (keys and members here, webhooks in webhooks.test.ts, actions in
    // gallery.test.ts): a new one fails here until it joins one.
    const withIds = routeGroups(stack.services).filter((g) => g.prefix === DASHBOARD_API)
      .flatMap((g) => g.routes.filter((r) => r.params).map((r) => `${r.method.toUpperCase()} ${r.path}`));
    assert.deepEqual(withIds.sort(), [
      'DELETE /members/{user_id}', 'DELETE /webhooks/{webhook_id}', 'GET /actions/{action_id}', 'GET /actions/{action_id}/events',
      'GET /webhooks/{webhook_id}/deliveries', 'PATCH /keys/{key_id}', 'PATCH /members/{user_id}', 'PATCH /webhooks/{webhook_id}',
      'POST /keys/{key_id}/revoke', 'POST /keys/{key_id}/spend-limit', 'POST /webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
    ]);
    // The spend limit is an owner's: an owner of A is answered 404 for B's key (a member of A, 403 before any id).
    const bLimit = await aOwner.browser.call('POST', `/keys/${bKey.id}/spend-limit`, { monthly_spend_limit: 1 });
    assert.deepEqual([bLimit.status, bLimit.body.detail.error], [404, 'not_found']);
    assert.equal((await b.browser.call('GET', '/keys')).body.keys.find((k: { id: number }) => k.id === bKey.id).monthly_spend_limit, null);
  });

  it('owners manage members: invite (the same answer for a taken email), change roles, remove (sessions end); never the last owner', async () => {
    const owner = await signedInUser(stack.baseUrl, stack.db);
    const member = await signedInUser(stack.baseUrl, stack.db, { accountId: owner.accountId, role: 'member' });
    const elsewhere = await signedInUser(stack.baseUrl, stack.db);
    const freshEmail = `new-${Date.now()}@example.com`;
    const fresh = await owner.browser.call('POST', '/members', { email: freshEmail });
    const taken = await owner.browser.call('POST', '/members', { email: elsewhere.email });
    assert.equal(fresh.status, 202);
    assert.deepEqual([taken.status, taken.body.message.replace(elsewhere.email, freshEmail)], [fresh.status, fresh.body.message]);
    assert.equal((await member.browser.call('GET', '/members')).status, 403);
    assert.equal((await member.browser.call('POST', '/members', { email: 'x@example.com' })).status, 403);

    const members = (await owner.browser.call('GET', '/members')).body.members;
    assert.deepEqual(members.map((m: { email: string }) => m.email).sort(), [owner.email, member.email, freshEmail].sort());
    assert.ok(!members.some((m: { email: string }) => m.email === elsewhere.email));

    const lastOwner = await owner.browser.call('PATCH', `/members/${owner.userId}`, { role: 'member' });
    assert.deepEqual([lastOwner.status, lastOwner.body.detail.error], [409, 'last_owner']);
    assert.equal((await owner.browser.call('PATCH', `/members/${member.userId}`, { role: 'owner' })).body.role, 'owner');
    assert.equal((await member.browser.call('GET', '/members')).status, 200, 'an owner now');
    assert.equal((await owner.browser.call('DELETE', `/members/${member.userId}`)).status, 204);
    assert.equal((await member.browser.call('GET', '/session')).status, 401, 'a removed user\'s session ends');
  });
});
