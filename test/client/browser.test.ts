import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { type Browser, chromium } from 'playwright-core';
import { CLIENT_DIR } from '../../ops/client-types';
import { ensureChromium } from '../../ops/tools/chromium';
import { newWebhookSecret, signature, standardWebhookHeaders } from '../../src/webhooks/events';
import { jpegBase64, newAccount } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/**
 * The client's built ES modules in Chromium, against the real service. The page is on the service's origin (the
 * modules are served under it by the browser's request routing), as a browser app behind the same host would be.
 */
describe('typed client in Chromium', function () {
  this.timeout(120_000);
  let stack: Stack;
  let browser: Browser;
  const modules = new Map<string, string>();
  before(async () => {
    const root = path.resolve(CLIENT_DIR, '..', '..');
    await promisify(execFile)(process.execPath, [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', CLIENT_DIR]);
    const dist = path.join(CLIENT_DIR, 'dist');
    for (const file of ['index.js', 'client.js', 'errors.js', 'idempotent.js', 'retry.js', 'schema.js', 'wait.js', 'webhooks.js']) {
      modules.set(`/__client/${file}`, await readFile(path.join(dist, file), 'utf8'));
    }
    modules.set('/__client/deps/openapi-fetch.js', await readFile(require.resolve('openapi-fetch', { paths: [root] }).replace(/index\.cjs$/, 'index.mjs'), 'utf8'));
    modules.set('/__client/deps/eventsource-parser.js', await readFile(require.resolve('eventsource-parser', { paths: [root] }).replace(/index\.cjs$/, 'index.js'), 'utf8'));
    [stack, browser] = await Promise.all([startStack(), chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] })]);
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('makes a typed call, waits on the live progress, throws ApiError, and verifies a webhook with Web Crypto', async () => {
    const { apiKey } = await newAccount(stack.db, 100);
    const page = await browser.newPage();
    await page.route(`${stack.baseUrl}/__client/**`, (route) => {
      const body = modules.get(new URL(route.request().url()).pathname);
      return body === undefined ? route.fulfill({ status: 404 }) : route.fulfill({ contentType: 'text/javascript', body });
    });
    await page.goto(`${stack.baseUrl}/openapi.json`);
    await page.addScriptTag({ type: 'importmap', content: JSON.stringify({ imports: { 'openapi-fetch': '/__client/deps/openapi-fetch.js', 'eventsource-parser': '/__client/deps/eventsource-parser.js' } }) });
    await page.addScriptTag({ type: 'module', content: 'import * as client from "/__client/index.js"; window.imageryClient = client;' });
    await page.waitForFunction(() => 'imageryClient' in globalThis);
    const secret = newWebhookSecret();
    const body = '{"action_id":1,"project_id":1,"card_id":1,"type":"generate"}';
    const id = '6f1c1a52-0000-4000-8000-000000000001';
    const headers = { 'X-Service-Signature': signature(secret, body), 'X-Service-Job-Id': id, ...standardWebhookHeaders(id, Math.floor(Date.now() / 1000), body, secret) };
    const outcome = await page.evaluate(async ({ key, image, hook }) => {
      const { createClient, ApiError, verifyWebhook } = (globalThis as any).imageryClient;
      const client = createClient({ baseUrl: (globalThis as unknown as { location: { origin: string } }).location.origin, apiKey: key });
      const { action_id: actionId } = await client.post('/api/v1/public/generate/photo', { body: { images: [{ data: image }] } });
      const events: string[] = [];
      const done = await client.wait(actionId, { timeoutMs: 60_000, onEvent: (e: { name: string }) => events.push(e.name) });
      const missing = await client.get('/api/v1/public/status/{action_id}', { params: { path: { action_id: 2_000_000_000 } } }).catch((e: unknown) => e);
      const verified = await verifyWebhook({ rawBody: hook.body, headers: new Headers(hook.headers), secret: hook.secret });
      const forged = await verifyWebhook({ rawBody: hook.body.replace('1', '2'), headers: new Headers(hook.headers), secret: hook.secret }).then(() => 'accepted', (e: Error) => e.name);
      return {
        status: done.status, lastEvent: events.at(-1), error: missing instanceof ApiError ? [missing.status, missing.code] : String(missing),
        delivery: verified.deliveryId, forged,
      };
    }, { key: apiKey, image: await jpegBase64(), hook: { body, headers, secret } });
    assert.deepEqual(outcome, { status: 'completed', lastEvent: 'completed', error: [404, 'not_found'], delivery: id, forged: 'WebhookVerificationError' });
  });
});
