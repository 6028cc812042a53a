/**
 * The dashboard's sessions over plain HTTP: signing in through the invitation link, the same refusal for a wrong
 * password and an unknown email, the throttle, fixation, expiry, signing out (everywhere), a password change, and
 * the CSRF guard (Origin and token) on every route that changes something.
 */
import assert from 'node:assert/strict';
import { routeGroups } from '../../api/app';
import type { Route } from '../../api/route';
import { createLink, RESET_LINK_SECONDS } from '../../src/users/links';
import { FAILURES_PER_EMAIL } from '../../src/users/sign-in';
import { DASHBOARD_API, dashboardBrowser, signedInUser, TEST_PASSWORD } from '../support/dashboard-client';
import { apiClient, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('dashboard sessions', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false });
  });
  after(() => stack.stop());

  it('an invitation link sets the password and signs in; the cookie is HttpOnly, SameSite=Lax, for /dashboard only', async () => {
    const { browser, email, userId, accountId } = await signedInUser(stack.baseUrl, stack.db);
    const me = await browser.call('GET', '/session');
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.user, { id: userId, email, role: 'owner', account_id: accountId });
    assert.match(me.body.csrf_token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(me.headers.get('cache-control'), 'no-store');

    const again = dashboardBrowser(stack.baseUrl);
    const signIn = await again.call('POST', '/sign-in', { email: email.toUpperCase(), password: TEST_PASSWORD });
    assert.equal(signIn.status, 200);
    const [cookie] = signIn.headers.getSetCookie();
    assert.match(cookie, /^imagery_session=[A-Za-z0-9_-]{43}; path=\/dashboard; samesite=lax; httponly$/);
    assert.notEqual(again.cookie(), browser.cookie());
  });

  it('a link works once: used, or for a removed user, or unknown, it answers 400 invalid_link', async () => {
    const { accountId } = await signedInUser(stack.baseUrl, stack.db);
    const email = `reset-${Date.now()}@example.com`;
    const { userId } = (await signedInUser(stack.baseUrl, stack.db, { accountId, email, role: 'member' }));
    const token = await stack.db.transaction((m) => createLink(m, userId, 'reset', RESET_LINK_SECONDS));
    const browser = dashboardBrowser(stack.baseUrl);
    assert.equal((await browser.call('POST', '/links/redeem', { token, password: 'a new password 1' })).status, 200);
    const used = await dashboardBrowser(stack.baseUrl).call('POST', '/links/redeem', { token, password: 'another password' });
    assert.deepEqual([used.status, used.body.detail.error], [400, 'invalid_link']);
    const unknown = await dashboardBrowser(stack.baseUrl).call('POST', '/links/redeem', { token: 'x'.repeat(43), password: 'another password' });
    assert.deepEqual([unknown.status, unknown.body.detail.error], [400, 'invalid_link']);
    const expired = await stack.db.transaction((m) => createLink(m, userId, 'reset', RESET_LINK_SECONDS));
    await stack.db.query(`UPDATE user_links SET expires_at = now() - interval '1 second' WHERE user_id = $1 AND used_at IS NULL`, [userId]);
    assert.equal((await dashboardBrowser(stack.baseUrl).call('POST', '/links/redeem', { token: expired, password: 'another password' })).status, 400);
  });

  it('a wrong password and an unknown email get the same answer; the password reset answers the same for both', async () => {
    const { email } = await signedInUser(stack.baseUrl, stack.db);
    const wrong = await dashboardBrowser(stack.baseUrl).call('POST', '/sign-in', { email, password: 'not the password' });
    const unknown = await dashboardBrowser(stack.baseUrl).call('POST', '/sign-in', { email: `nobody-${Date.now()}@example.com`, password: 'not the password' });
    assert.equal(wrong.status, 401);
    assert.deepEqual(unknown.body, wrong.body);
    assert.equal(wrong.body.detail.error, 'invalid_credentials');
    const resetKnown = await dashboardBrowser(stack.baseUrl).call('POST', '/password-reset', { email });
    const resetUnknown = await dashboardBrowser(stack.baseUrl).call('POST', '/password-reset', { email: `nobody-${Date.now()}@example.com` });
    assert.equal(resetKnown.status, 202);
    assert.deepEqual([resetUnknown.status, resetUnknown.body], [resetKnown.status, resetKnown.body]);
  });

  it(`the ${FAILURES_PER_EMAIL + 1}th wrong password for an email in the window is refused without checking it, the right one too`, async () => {
    const { email } = await signedInUser(stack.baseUrl, stack.db);
    // At once, as an attacker would send them: each counted before its password is checked, so none slips past.
    const tries = await Promise.all(Array.from({ length: FAILURES_PER_EMAIL + 5 }, (_, i) =>
      dashboardBrowser(stack.baseUrl).call('POST', '/sign-in', { email, password: `wrong ${i}` })));
    assert.deepEqual([tries.filter((t) => t.status === 401).length, tries.filter((t) => t.status === 429).length], [FAILURES_PER_EMAIL, 5]);
    // A client's X-Forwarded-For counts for nothing without a trusted proxy (TRUSTED_PROXY_HOPS=0).
    const refused = await dashboardBrowser(stack.baseUrl).call('POST', '/sign-in', { email, password: TEST_PASSWORD }, { 'X-Forwarded-For': '198.51.100.7' });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.detail.error, 'too_many_attempts');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
  });

  it('fixation: a session token planted before sign-in is not the session after it, and is ended', async () => {
    const planted = await signedInUser(stack.baseUrl, stack.db); // the attacker's own valid session
    const victim = await signedInUser(stack.baseUrl, stack.db);
    const browser = dashboardBrowser(stack.baseUrl);
    browser.setCookie(planted.browser.cookie());
    const signIn = await browser.call('POST', '/sign-in', { email: victim.email, password: TEST_PASSWORD });
    assert.equal(signIn.status, 200);
    assert.notEqual(browser.cookie(), planted.browser.cookie());
    assert.equal((await planted.browser.call('GET', '/session')).status, 401);
  });

  it('a session not used for the idle lifetime, or past its absolute one, has ended', async () => {
    const idle = await signedInUser(stack.baseUrl, stack.db);
    const old = await signedInUser(stack.baseUrl, stack.db);
    await stack.db.query(`UPDATE user_sessions SET last_seen_at = now() - interval '8 hours 1 second' WHERE user_id = $1`, [idle.userId]);
    await stack.db.query(`UPDATE user_sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [old.userId]);
    for (const { browser } of [idle, old]) {
      const answer = await browser.call('GET', '/session');
      assert.deepEqual([answer.status, answer.body.detail.error], [401, 'not_signed_in']);
    }
  });

  it('sign-out ends the session; sign-out everywhere ends every session of the user on every process', async () => {
    const first = await signedInUser(stack.baseUrl, stack.db);
    const other = await startStack({ withWorker: false }); // a second API process over the same database
    try {
      const second = dashboardBrowser(other.baseUrl);
      assert.equal((await second.call('POST', '/sign-in', { email: first.email, password: TEST_PASSWORD })).status, 200);
      const third = dashboardBrowser(stack.baseUrl);
      assert.equal((await third.call('POST', '/sign-in', { email: first.email, password: TEST_PASSWORD })).status, 200);

      const token = third.cookie();
      assert.equal((await third.call('POST', '/sign-out')).status, 204);
      assert.equal(third.cookie(), undefined);
      third.setCookie(token);
      assert.equal((await third.call('GET', '/session')).status, 401);

      assert.equal((await second.call('GET', '/session')).status, 200);
      assert.equal((await first.browser.call('POST', '/sign-out-everywhere')).status, 204);
      assert.equal((await second.call('GET', '/session')).status, 401);
      assert.equal((await first.browser.call('GET', '/session')).status, 401);
    } finally {
      await other.stop();
    }
  });

  it('a password change ends every other session and keeps this browser signed in with a new token', async () => {
    const user = await signedInUser(stack.baseUrl, stack.db);
    const elsewhere = dashboardBrowser(stack.baseUrl);
    assert.equal((await elsewhere.call('POST', '/sign-in', { email: user.email, password: TEST_PASSWORD })).status, 200);
    const wrong = await user.browser.call('POST', '/password', { current_password: 'not it', new_password: 'a brand new password' });
    assert.deepEqual([wrong.status, wrong.body.detail.error], [401, 'invalid_credentials']);
    const before = user.browser.cookie();
    assert.equal((await user.browser.call('POST', '/password', { current_password: TEST_PASSWORD, new_password: 'a brand new password' })).status, 200);
    assert.notEqual(user.browser.cookie(), before);
    assert.equal((await user.browser.call('GET', '/session')).status, 200);
    assert.equal((await elsewhere.call('GET', '/session')).status, 401);
    const signIn = await dashboardBrowser(stack.baseUrl).call('POST', '/sign-in', { email: user.email, password: 'a brand new password' });
    assert.equal(signIn.status, 200);
  });

  it('CSRF: a cross-site form post or fetch changes nothing (Origin, then the session\'s token)', async () => {
    const { browser, accountId } = await signedInUser(stack.baseUrl, stack.db);
    const keysBefore = (await browser.call('GET', '/keys')).body.keys.length;
    const attempts: [string, Record<string, string>, string | undefined][] = [
      ['no Origin', { Origin: '' }, undefined],
      ['another site\'s Origin', { Origin: 'https://evil.example' }, undefined],
      ['"null" Origin (a sandboxed frame)', { Origin: 'null' }, undefined],
      ['a form post (text/plain) from another site', { Origin: 'https://evil.example', 'Content-Type': 'text/plain' }, '{"name":"x"}'],
      ['our Origin but no CSRF token', { 'X-CSRF-Token': '' }, undefined],
      ['our Origin and a wrong CSRF token', { 'X-CSRF-Token': 'x'.repeat(43) }, undefined],
    ];
    for (const [what, headers, raw] of attempts) {
      const answer = await browser.call('POST', '/keys', raw ?? { name: 'csrf' }, headers);
      assert.deepEqual([answer.status, answer.body?.detail?.error], [403, 'csrf_refused'], what);
    }
    const signIn = await dashboardBrowser(stack.baseUrl).call('POST', '/sign-in', { email: 'x@example.com', password: 'y' }, { Origin: 'https://evil.example' });
    assert.equal(signIn.status, 403, 'a cross-site sign-in (login CSRF)');
    const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM api_keys WHERE account_id = $1', [accountId]);
    assert.equal(n, keysBefore);
  });

  it('a signed-out browser gets 401 not_signed_in from every route but signing in; an API key opens nothing', async () => {
    const account = await newAccount(stack.db, 10);
    const anonymous = dashboardBrowser(stack.baseUrl);
    const withKey = { Authorization: `Bearer ${account.apiKey}` };
    const routes = routeGroups(stack.services).filter((g) => g.prefix === DASHBOARD_API).flatMap((g) => g.routes) as (Route & { access: string })[];
    assert.deepEqual(routes.filter((r) => r.access === 'public').map((r) => `${r.method.toUpperCase()} ${r.path}`).sort(),
      ['GET /features', 'POST /links/redeem', 'POST /password-reset', 'POST /sign-in', 'POST /sign-up']);
    for (const { method, path } of routes.filter((r) => r.access !== 'public')) {
      const concrete = path.replace(/\{delivery_id\}/, '00000000-0000-4000-8000-000000000000').replace(/\{[a-z_]+\}/g, '1');
      const answer = await anonymous.call(method.toUpperCase(), concrete, method === 'get' ? undefined : {}, withKey);
      assert.deepEqual([answer.status, answer.body?.detail?.error], [401, 'not_signed_in'], `${method} ${path}`);
    }
    assert.deepEqual((await anonymous.call('GET', '/features')).body, { sign_up: false });
    const closed = await anonymous.call('POST', '/sign-up', { email: 'someone@example.com' });
    assert.deepEqual([closed.status, closed.body.detail.error], [403, 'sign_up_closed'], 'open sign-up is off by default');
    // And the public API is key-only: a dashboard session opens nothing there.
    const { browser } = await signedInUser(stack.baseUrl, stack.db);
    const balance = await apiClient(stack.baseUrl)('GET', `${V1}/balance`, undefined, { Cookie: `imagery_session=${browser.cookie()}` });
    assert.equal(balance.status, 401);
    const openapi = await apiClient(stack.baseUrl)('GET', '/openapi.json');
    assert.ok(!Object.keys(openapi.body.paths).some((p) => p.startsWith(DASHBOARD_API) || p.includes('sign-in')));
  });
});
