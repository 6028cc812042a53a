/**
 * The dashboard's pages with a full account (issue 25: each page's first render under 1 s with 1,000 actions): one
 * API process alone, an account of `count` completed actions (each with its hold, charge, events and a thumbnail
 * file, as a render leaves them), a signed-in owner in Chromium, and each page opened anew `runs` times: the time
 * from the navigation's start to the page's content on screen (its list or figures, not every image loaded), read
 * in the page (`performance.now()` once the content's element is there).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { ensureChromium } from '../ops/tools/chromium';
import { sqlRows } from '../src/db/sql';
import { makeThumbnail, thumbnailKeyOf } from '../src/media/thumbnails';
import { inviteUser } from '../src/users/users';
import { jpegBase64, newAccount } from '../test/support/fixtures';
import { insertActions } from './large-database';
import { Figures, recordValue } from './measured';
import { startService, type ServiceContext } from './service';

/** Each page, where it is, and the element that says its content is on screen. */
export const DASHBOARD_PAGES: Record<string, { path: (actionId: number) => string; ready: string }> = {
  overview: { path: () => '/dashboard/', ready: 'table.list tbody tr' },
  gallery: { path: () => '/dashboard/gallery', ready: 'ul.gallery li' },
  action: { path: (id) => `/dashboard/actions/${id}`, ready: 'ol.timeline li' },
  billing: { path: () => '/dashboard/billing', ready: 'table.list tbody tr' },
  keys: { path: () => '/dashboard/keys', ready: 'table.list tbody tr' },
  webhooks: { path: () => '/dashboard/webhooks', ready: 'form[aria-label="Register a webhook"]' },
  try: { path: () => '/dashboard/try', ready: 'form[aria-label="Start a generation"]' },
};

const PASSWORD = 'bench dashboard password';

/** Records `dash.<page>` (ms to the page's content) for every page of DASHBOARD_PAGES. */
export async function measureDashboardPages(ctx: ServiceContext, figures: Figures, count: number, runs: number): Promise<void> {
  const { accountId } = await newAccount(ctx.db, 1_000, 'bench dashboard');
  await insertActions(ctx.db, [accountId], count);
  const actions = await sqlRows<{ id: number; asset_path: string }>(ctx.db.manager,
    'UPDATE actions SET has_thumbnail = true WHERE account_id = $1 RETURNING id, asset_path', [accountId]);
  const name = 'api-dashboard-pages';
  const assets = path.join(ctx.dataDir, name, 'assets');
  const thumbnail = await makeThumbnail(Buffer.from(await jpegBase64(1200, 1600), 'base64'));
  for (const { asset_path: key } of actions) {
    const file = path.join(assets, thumbnailKeyOf(key));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, thumbnail);
  }
  const invited = await inviteUser(ctx.db, { accountId, email: `bench-${accountId}@example.com`, role: 'owner' });
  if (invited === 'taken') throw new Error('the bench owner\'s email is taken');

  const service = await startService(ctx, 'api', name, 'bench-dashboard');
  const browser = await chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const redeemed = await context.request.post(`${service.url}/dashboard/api/links/redeem`, {
      headers: { Origin: service.url }, data: { token: invited.token, password: PASSWORD },
    });
    if (!redeemed.ok()) throw new Error(`redeem: ${redeemed.status()} ${await redeemed.text()}`);
    const page = await context.newPage();
    const actionId = actions[actions.length - 1].id;
    // Warm: every page once (the process's first requests, the browser's cache of the app's files: a returning user).
    for (const { path: at, ready } of Object.values(DASHBOARD_PAGES)) {
      await page.goto(`${service.url}${at(actionId)}`, { waitUntil: 'commit' });
      await page.waitForSelector(ready);
    }
    for (let run = 0; run < runs; run++) {
      for (const [key, { path: at, ready }] of Object.entries(DASHBOARD_PAGES)) {
        await page.goto(`${service.url}${at(actionId)}`, { waitUntil: 'commit' }); // not waiting for every image to load
        await page.waitForSelector(ready);
        recordValue(figures, `dash.${key}`, await page.evaluate(() => performance.now()));
      }
    }
  } finally {
    await browser.close();
    await service.stop();
  }
}
