/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against the real service: the first
 * owner signs in through the CLI's link, creates a key (a hostile name shown as text), uses it from the test's HTTP
 * client, revokes it and sees the API refuse it; members and the account page; no serious or critical axe
 * violation on any page, at 375 px and on a desktop.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';
import { ensureChromium } from '../../ops/tools/chromium';
import { testEnvironment } from '../support/environment';
import { apiClient, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

const ROOT = path.resolve(__dirname, '../../..');
const HOSTILE = '<img src=x onerror=alert(1)>';

/** Serious and critical axe violations of the page as it is now. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

describe('the dashboard in Chromium', function () {
  this.timeout(120_000);
  let stack: Stack;
  let browser: Browser;
  before(async () => {
    const executablePath = await ensureChromium();
    [stack, browser] = await Promise.all([startStack({ withWorker: false }), chromium.launch({ executablePath, args: ['--no-sandbox'] })]);
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  for (const viewport of [{ width: 375, height: 740 }, { width: 1280, height: 800 }]) {
    it(`at ${viewport.width} px: sign in from the CLI's link, create, use and revoke a key, manage members, no axe problems`, async () => {
      const account = await newAccount(stack.db, 50);
      const email = `owner-${viewport.width}-${Date.now()}@example.com`;
      const { stdout } = await promisify(execFile)('node', [path.join(ROOT, 'dist/app/cli/admin.js'), 'user:invite', '--account', String(account.accountId), '--email', email, '--json'], {
        env: { ...process.env, DATABASE_URL: testEnvironment().databaseUrl, PUBLIC_BASE_URL: stack.baseUrl },
      });
      const { link } = JSON.parse(stdout);
      const context = await browser.newContext({ viewport, permissions: ['clipboard-read', 'clipboard-write'] });
      const page = await context.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (d) => { dialogs.push(d.message()); void d.dismiss(); });
      try {
        await page.goto(link);
        await page.getByRole('heading', { name: 'Choose your password' }).waitFor();
        assert.ok(!page.url().includes('#link='), 'the token leaves the address bar');
        assert.deepEqual(await accessibilityProblems(page), []);
        await page.getByLabel('New password').fill('a long enough password');
        await page.getByLabel('Repeat it').fill('a long enough password');
        await page.getByRole('button', { name: 'Set password and sign in' }).click();
        await page.getByRole('heading', { name: 'Overview' }).waitFor();
        await page.getByText('50').first().waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);

        await page.getByRole('link', { name: 'API keys' }).click();
        await page.getByRole('heading', { name: 'API keys' }).waitFor();
        await page.getByLabel('Name', { exact: true }).fill(HOSTILE);
        await page.getByRole('button', { name: 'Create key' }).click();
        const secret = (await page.locator('code.key').textContent())!;
        assert.match(secret, /^ak_[A-Za-z0-9]{40}$/);
        await page.getByRole('button', { name: 'Copy key' }).click();
        assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
        await page.getByRole('cell', { name: new RegExp(HOSTILE.replace(/[()]/g, '\\$&')) }).first().waitFor(); // shown as text
        assert.deepEqual(await accessibilityProblems(page), []);

        assert.equal((await apiClient(stack.baseUrl, secret)('GET', `${V1}/balance`)).status, 200);
        const row = page.getByRole('row').filter({ hasText: secret.slice(0, 8) });
        await row.getByRole('button', { name: 'Revoke' }).click();
        await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke key' }).click();
        await row.getByText(/^Revoked/).waitFor();
        const refused = await apiClient(stack.baseUrl, secret)('GET', `${V1}/balance`);
        assert.deepEqual([refused.status, refused.body.detail.error], [401, 'invalid_api_key']);
        await page.reload();
        assert.ok(!(await page.content()).includes(secret.slice(8)), 'the secret is in no page served later');

        await page.getByRole('link', { name: 'Members' }).click();
        await page.getByRole('heading', { name: 'Members' }).waitFor();
        await page.getByLabel('Email', { exact: true }).fill(`member-${viewport.width}-${Date.now()}@example.com`);
        await page.getByRole('button', { name: 'Send invitation' }).click();
        await page.getByText(/An invitation is on its way/).waitFor();
        await page.getByText('invited').waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);

        await page.getByRole('link', { name: 'Account' }).click();
        await page.getByRole('heading', { name: 'Change your password' }).waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);
        await page.getByRole('button', { name: 'Sign out everywhere' }).click();
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);
        assert.deepEqual(dialogs, [], 'no script of a name ran');
      } finally {
        await context.close();
      }
    });
  }
});
