/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against the real service: the first
 * owner signs in through the CLI's link, creates a key (a hostile name shown as text), generates a photo with it from
 * the test's HTTP client and sees it complete on the overview without a reload, then its thumbnail in the gallery and
 * its detail (versions, timeline); registers a webhook to a local
 * receiver, sees a refused delivery in its log and redelivers it; reads the ledger and exports it as CSV; revokes the key and sees the API refuse it;
 * starts a photo from an uploaded file on Try it and follows it to the end; members and the account page; no serious
 * or critical axe violation on any page, at 375 px and on a desktop (where it saves the README's screenshots).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';
import { ensureChromium } from '../../ops/tools/chromium';
import { testEnvironment } from '../support/environment';
import { apiClient, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { startHttpsServer, type TestHttpsServer } from '../support/https-server';
import { Stack, startStack } from '../support/stack';
import { deliveryWorkflowId } from '../../src/temporal/contract';

const ROOT = path.resolve(__dirname, '../../..');
const HOSTILE = '<img src=x onerror=alert(1)>';

/**
 * Where the desktop run saves the README's pictures: `SCREENSHOTS_DIR` (`docs/screenshots` to renew them), else
 * `.data/screenshots`.
 */
const SCREENSHOTS = path.resolve(ROOT, process.env.SCREENSHOTS_DIR ?? '.data/screenshots');

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
  let receiver: TestHttpsServer;
  let image: string;
  /** The status each path of the receiver answers now. */
  const answers = new Map<string, number>();
  before(async () => {
    const executablePath = await ensureChromium();
    [stack, browser, receiver, image] = await Promise.all([
      startStack({ webhookRetryInitialMs: 100 }), chromium.launch({ executablePath, args: ['--no-sandbox'] }),
      startHttpsServer((req, res) => { res.writeHead(answers.get(req.url!) ?? 200).end('ok'); }), jpegBase64(),
    ]);
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await stack?.stop();
  });
  const generate = (apiKey: string, productName: string) => apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, {
    images: [{ data: image }], product_name: productName, category_id: 'home', resolution: '1K',
  });

  for (const viewport of [{ width: 375, height: 740 }, { width: 1280, height: 800 }]) {
    it(`at ${viewport.width} px: sign in from the CLI's link, a key used and revoked, live overview, gallery and detail, a batch in the gallery, webhook log and redelivery, ledger and CSV, try it, members, no axe problems`, async () => {
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
        // A sandbox key, made beside it and listed marked as one.
        await page.getByRole('button', { name: 'Done' }).click();
        await page.getByLabel('Name', { exact: true }).fill('CI drills');
        await page.getByLabel('Kind').selectOption('sandbox');
        await page.getByRole('button', { name: 'Create key' }).click();
        assert.match((await page.locator('code.key').textContent())!, /^ak_test_[A-Za-z0-9]{40}$/);
        await page.getByRole('row').filter({ hasText: 'CI drills' }).getByText('Sandbox', { exact: true }).waitFor();
        await page.getByText('Sandbox sparks:').waitFor();
        // Renamed, then limited, in place.
        await page.getByRole('button', { name: 'Done' }).click();
        await page.getByRole('button', { name: 'Rename CI drills' }).click();
        await page.getByLabel('New name').fill('CI drills, renamed');
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByRole('button', { name: 'Set limit of CI drills, renamed' }).click();
        await page.getByLabel('Monthly spend limit in sparks (empty: none)').fill('25');
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByRole('row').filter({ hasText: 'CI drills, renamed' }).getByText('0 of 25 sparks').waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);

        // Generated with the key, the photo shows on the overview and completes there, without a reload.
        await page.getByRole('link', { name: 'Overview' }).click();
        await page.getByRole('heading', { name: 'Latest actions and jobs' }).or(page.getByText('Nothing yet')).first().waitFor();
        const accepted = await generate(secret, `Teapot ${HOSTILE}`);
        assert.equal(accepted.status, 200);
        const actionRow = page.getByRole('row').filter({ hasText: 'Teapot' });
        await actionRow.getByText('completed').waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);
        const picture = (name: string) => (viewport.width >= 1280 ? page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true }) : undefined);
        await picture('overview');

        // The gallery shows its thumbnail (a hostile product name as text); its detail has the versions and timeline.
        await page.getByRole('link', { name: 'Gallery' }).click();
        const tile = page.getByRole('link').filter({ has: page.getByRole('img', { name: `Teapot ${HOSTILE}` }) });
        await tile.waitFor();
        const thumbnailWidth = await tile.locator('img').evaluate(async (element) => {
          const img = element as unknown as { decode(): Promise<void>; naturalWidth: number };
          await img.decode(); // loaded (it fails on a broken image)
          return img.naturalWidth;
        });
        assert.ok(thumbnailWidth > 0 && thumbnailWidth <= 320, `the thumbnail is ${thumbnailWidth} px wide`);
        assert.deepEqual(await accessibilityProblems(page), []);
        await picture('gallery');
        await tile.click();
        await page.getByRole('heading', { name: 'Versions of this card' }).waitFor();
        const result = await page.getByRole('link', { name: 'Open the result' }).getAttribute('href');
        const opened = await context.request.get(result!); // the result itself, as the link opens it
        assert.deepEqual([opened.status(), opened.headers()['content-type']], [200, 'image/jpeg']);
        await page.locator('ol.timeline li').filter({ hasText: 'completed' }).first().waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);

        // A catalogue batch: listed with its items per status; its items, and only they, in the gallery.
        const batch = await apiClient(stack.baseUrl, secret)('POST', '/api/v2/batches', {
          items: ['a', 'b'].map((sku) => ({ external_id: sku, type: 'photo', images: [{ data: image }], product_name: `Lamp ${sku}`, category_id: 'home', resolution: '1K' })),
        });
        assert.equal(batch.status, 202, JSON.stringify(batch.body));
        await stack.temporal.workflow.getHandle(`batch-${batch.body.batch_id}`).result();
        await page.getByRole('link', { name: 'Batches' }).click();
        const batchRow = page.getByRole('row').filter({ hasText: batch.body.batch_id });
        await batchRow.getByText('2 succeeded').waitFor();
        await batchRow.getByText('10 charged').waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);
        await picture('batches');
        await batchRow.getByRole('link', { name: 'In the gallery' }).click();
        await page.getByRole('img', { name: 'Lamp b' }).waitFor();
        await page.getByRole('img', { name: 'Lamp a' }).waitFor();
        assert.equal(await page.getByRole('img', { name: `Teapot ${HOSTILE}` }).count(), 0, 'only the batch\'s items');
        assert.deepEqual(await accessibilityProblems(page), []);

        // A webhook whose receiver refuses: the refused delivery is in its log, and a redelivery goes through.
        const hookPath = `/hook-${viewport.width}`;
        answers.set(hookPath, 400);
        await page.getByRole('link', { name: 'Webhooks' }).click();
        await page.getByLabel('HTTPS URL').fill(`${receiver.url}${hookPath}`);
        await page.getByLabel('generation.completed').check();
        await page.getByRole('button', { name: 'Register webhook' }).click();
        assert.match((await page.locator('code.key').textContent())!, /^whsec_/);
        await page.getByRole('button', { name: 'Done' }).click();
        assert.deepEqual(await accessibilityProblems(page), []);
        assert.equal((await generate(secret, 'Vase')).status, 200);
        await page.getByRole('button', { name: 'Deliveries' }).click();
        const delivery = page.getByRole('row').filter({ hasText: 'generation.completed' });
        await delivery.getByText('Failed').waitFor();
        await delivery.getByText('400').waitFor();
        const deliveryId = (await stack.db.query('SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.url LIKE $1', [`%${hookPath}`]))[0].id;
        await stack.temporal.workflow.getHandle(deliveryWorkflowId(deliveryId)).result(); // its attempts are over
        answers.set(hookPath, 200);
        await delivery.getByRole('button', { name: 'Redeliver' }).click();
        await delivery.getByText('Delivered').waitFor();
        await delivery.getByText('2 of 5').waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);
        await picture('delivery-log');

        // Try it: a photo from an uploaded file, followed on its detail page to the end.
        await page.getByRole('link', { name: 'Try it' }).click();
        await page.getByLabel('Product photo').setInputFiles({ name: 'mug.jpg', mimeType: 'image/jpeg', buffer: Buffer.from(image, 'base64') });
        await page.getByLabel('Product name (optional: detected when left out)').fill('Mug from the page');
        assert.deepEqual(await accessibilityProblems(page), []);
        await page.getByRole('button', { name: 'Start' }).click();
        await page.getByRole('heading', { name: /^Action \d+/ }).getByText('completed').waitFor();
        await page.getByRole('link', { name: 'Open the result' }).waitFor();

        // The ledger: the photos' holds and charges, and the whole of it as CSV.
        await page.getByRole('link', { name: 'Billing' }).click();
        await page.getByRole('row').filter({ hasText: `Action ${accepted.body.action_id}` }).filter({ hasText: 'Charge' }).waitFor();
        assert.deepEqual(await accessibilityProblems(page), []);
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
        const csv = await readFile((await download.path())!, 'utf8');
        assert.ok(csv.startsWith('at,kind,amount,action_id,reference\n'), csv);
        assert.ok(csv.split('\n').some((line) => /^[^,]+,charge,-[0-9]+,/.test(line) && line.split(',')[3] === String(accepted.body.action_id)), csv);

        await page.getByRole('link', { name: 'API keys' }).click();
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
