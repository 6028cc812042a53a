import assert from 'node:assert/strict';
import sharp from 'sharp';
import { createKey, topUpSandboxes } from '../../src/accounts/accounts';
import { readPriceList } from '../../src/billing/pricing';
import { allFrom, UnconfiguredProvider } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { SandboxRenderer } from '../../src/providers/sandbox';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, moneyOf, newAccount, V1 } from '../support/fixtures';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { probeVideo } from '../support/media';
import { Stack, startStack } from '../support/stack';

const V2 = '/api/v2';
const SLOW_MS = 1500;

/** Whether the picture's top rows are the sandbox band: mostly red. */
async function hasSandboxBand(bytes: Buffer): Promise<boolean> {
  const { width } = await sharp(bytes).metadata();
  const band = await sharp(bytes).extract({ left: 0, top: 1, width: width!, height: 2 }).png().toBuffer();
  const { channels: [r, g, b] } = await sharp(band).stats();
  return r.mean > 150 && g.mean < 110 && b.mean < 110;
}

/** The share of the picture's pixels that are the band's red. */
async function redShare(bytes: Buffer): Promise<number> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let red = 0;
  for (let i = 0; i < data.length; i += info.channels) if (data[i] > 150 && data[i + 1] < 100 && data[i + 2] < 100) red++;
  return red / (info.width * info.height);
}

describe('sandbox keys', function () {
  this.timeout(120_000);
  let stack: Stack;
  let receiver: TestHttpsServer;
  let image: string;
  before(async () => {
    const local = new LocalRenderer();
    stack = await startStack({
      providers: allFrom(local, new SandboxRenderer(local, { slowMs: SLOW_MS })), webhookRetryInitialMs: 100, jobMaxAttempts: 3, jobRetryBackoffMs: 200,
    });
    receiver = await startHttpsServer((_req, res) => void res.writeHead(200).end('ok'));
    image = await jpegBase64(400, 500, '#2060c0');
  });
  after(async () => {
    await receiver.close();
    await stack.stop();
  });

  /** A live account with 100 sparks and a sandbox key beside its live one. */
  async function accountWithSandbox() {
    const live = await newAccount(stack.db, 100);
    const test = await createKey(stack.db, live.accountId, 'ci', 'api_key_inbox', { sandbox: { sparks: 1000 } });
    const [{ account_id: sandboxId }] = await stack.db.query('SELECT account_id FROM api_keys WHERE id = $1', [test.keyId]);
    return { live, liveCall: apiClient(stack.baseUrl, live.apiKey), sandboxId: sandboxId as number, call: apiClient(stack.baseUrl, test.apiKey), testKey: test.apiKey };
  }
  const photo = () => ({ images: [{ data: image }], product_name: 'Cup', category_id: 'home', resolution: '1K' });
  const finish = (actionId: number) => stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
  const finishJob = (jobId: string) => stack.temporal.workflow.getHandle(jobWorkflowId(jobId)).result();
  async function download(call: ReturnType<typeof apiClient>, actionId: number): Promise<Buffer> {
    const status = (await call('GET', `${V1}/status/${actionId}`)).body;
    assert.equal(status.status, 'completed', JSON.stringify(status));
    return Buffer.from(await (await fetch(status.result_url)).arrayBuffer());
  }
  const deliveriesOf = (actionId: number) => receiver.requests.filter((r) => JSON.parse(r.body.toString()).action_id === actionId);

  it('walks a photo, a card, a video, an edit and a v2 job on the sandbox renderer, marked, paid with sandbox sparks, announced with livemode false', async () => {
    const { live, liveCall, sandboxId, call } = await accountWithSandbox();
    assert.equal((await call('POST', `${V1}/webhooks`, { url: `${receiver.url}/sandbox-walk` })).status, 201);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 1000, available: 1000, holds: 0 });

    const shot = (await call('POST', `${V1}/generate/photo`, photo())).body;
    const card = (await call('POST', `${V1}/generate/card`, { ...photo(), style: 'cinematic' })).body;
    const video = (await call('POST', `${V1}/generate/video`, { image: { data: image }, scenario: 'slow turn' })).body;
    await Promise.all([finish(shot.action_id), finish(card.action_id), finish(video.action_id)]);
    const edit = (await call('POST', `${V1}/edit/${shot.action_id}`, { instruction: 'warmer' })).body;
    const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
    await Promise.all([finish(edit.action_id), finishJob(job.job_id)]);
    assert.equal((await call('GET', `${V2}/jobs/${job.job_id}`)).body.status, 'succeeded');

    for (const id of [shot.action_id, card.action_id, edit.action_id, job.resource_id]) {
      assert.ok(await hasSandboxBand(await download(call, id)), `action ${id} carries the SANDBOX band`);
    }
    const { firstFrame } = await probeVideo(await download(call, video.action_id));
    assert.ok(await redShare(firstFrame) > 0.01, 'the video\'s picture carries the band');
    const providers = await stack.db.query('SELECT DISTINCT provider FROM actions WHERE account_id = $1', [sandboxId]);
    assert.deepEqual(providers.map((r: { provider: string }) => r.provider), ['sandbox']);

    const prices = await readPriceList(stack.db, { fresh: true });
    const spent = 3 * prices.generation + prices.video_5sec + prices.improvement;
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 1000 - spent, available: 1000 - spent, holds: 0 });
    assert.deepEqual((await liveCall('GET', `${V1}/balance`)).body, { balance: 100, available: 100, holds: 0 }, 'live sparks never move');
    await assertMoneyConsistent(stack.db, sandboxId);
    await assertMoneyConsistent(stack.db, live.accountId);

    for (const id of [shot.action_id, card.action_id, video.action_id, edit.action_id, job.resource_id]) {
      const [delivery] = await eventually(async () => deliveriesOf(id), (found) => found.length > 0);
      const payload = JSON.parse(delivery.body.toString());
      assert.equal(payload.livemode, false);
      assert.ok(delivery.headers['x-service-signature'], 'signed');
    }
  });

  it('keeps sandbox and live apart in every lookup and list, both ways', async () => {
    const { liveCall, call } = await accountWithSandbox();
    const sandboxShot = (await call('POST', `${V1}/generate/photo`, photo())).body;
    const liveShot = (await liveCall('POST', `${V1}/generate/photo`, photo())).body;
    const sandboxJob = (await call('POST', `${V2}/jobs/generate`, photo())).body;
    await Promise.all([finish(sandboxShot.action_id), finish(liveShot.action_id), finishJob(sandboxJob.job_id)]);
    const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db, 1)).apiKey);

    for (const [caller, other] of [[liveCall, sandboxShot], [call, liveShot]] as const) {
      const seen = await caller('GET', `${V1}/status/${other.action_id}`);
      assert.equal(seen.status, (await stranger('GET', `${V1}/status/${other.action_id}`)).status, 'as another account\'s');
      assert.ok([403, 404].includes(seen.status));
      assert.equal((await caller('GET', `${V1}/projects/${other.project_id}`)).status, seen.status);
      assert.equal((await caller('POST', `${V1}/edit/${other.action_id}`, { instruction: 'x' })).status, seen.status);
    }
    assert.equal((await liveCall('GET', `${V2}/jobs/${sandboxJob.job_id}`)).status, 404);
    const liveProjects = (await liveCall('GET', `${V1}/projects?source=all`)).body.items.map((p: { id: number }) => p.id);
    const sandboxProjects = (await call('GET', `${V1}/projects?source=all`)).body.items.map((p: { id: number }) => p.id);
    assert.ok(liveProjects.includes(liveShot.project_id) && !liveProjects.includes(sandboxShot.project_id));
    assert.ok(sandboxProjects.includes(sandboxShot.project_id) && !sandboxProjects.includes(liveShot.project_id));
    const feed = (await liveCall('GET', `${V1}/events?limit=500`)).body.events.map((e: { action_id: number }) => e.action_id);
    assert.ok(feed.includes(liveShot.action_id) && !feed.includes(sandboxShot.action_id), 'the feed too');
  });

  it('answers X-Sandbox-Scenario on a live key with 400 unsupported_parameter, and an unknown drill with 422', async () => {
    const { liveCall, call } = await accountWithSandbox();
    const live = await liveCall('POST', `${V1}/generate/photo`, photo(), { 'X-Sandbox-Scenario': 'slow' });
    assert.equal(live.status, 400);
    assert.equal(live.body.detail.error, 'unsupported_parameter');
    const unknown = await call('POST', `${V1}/generate/photo`, photo(), { 'X-Sandbox-Scenario': 'meteor_strike' });
    assert.equal(unknown.status, 422);
    assert.ok(Array.isArray(unknown.body.detail));
    assert.deepEqual((await liveCall('GET', `${V1}/balance`)).body.holds, 0, 'nothing held');
  });

  describe('drills', () => {
    it('provider_error fails the action and releases its hold', async () => {
      const { sandboxId, call } = await accountWithSandbox();
      const res = await call('POST', `${V1}/generate/photo`, photo(), { 'X-Sandbox-Scenario': 'provider_error' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await finish(res.body.action_id);
      const status = (await call('GET', `${V1}/status/${res.body.action_id}`)).body;
      assert.equal(status.status, 'failed');
      assert.match(status.error_message, /sandbox drill provider_error/);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 1000, available: 1000, holds: 0 });
      await assertMoneyConsistent(stack.db, sandboxId);
    });

    it('provider_timeout retries a v2 job until its attempts are spent, then dead-letters it, released', async () => {
      const { call } = await accountWithSandbox();
      const job = (await call('POST', `${V2}/jobs/generate`, photo(), { 'X-Sandbox-Scenario': 'provider_timeout' })).body;
      await finishJob(job.job_id);
      const ended = (await call('GET', `${V2}/jobs/${job.job_id}`)).body;
      assert.equal(ended.status, 'dead_letter', JSON.stringify(ended));
      assert.equal(ended.error_code, 'provider_timeout');
      const [{ attempts }] = await stack.db.query('SELECT attempts FROM jobs WHERE id = $1', [job.job_id]);
      assert.equal(attempts, 3);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 1000);
    });

    it('retry_then_succeed takes a v2 job through retry_scheduled to success', async () => {
      const { call } = await accountWithSandbox();
      const job = (await call('POST', `${V2}/jobs/generate`, photo(), { 'X-Sandbox-Scenario': 'retry_then_succeed' })).body;
      await finishJob(job.job_id);
      assert.equal((await call('GET', `${V2}/jobs/${job.job_id}`)).body.status, 'succeeded');
      const statuses = (await call('GET', `${V2}/events?limit=500`)).body.events
        .filter((e: { job_id: string }) => e.job_id === job.job_id).map((e: { status: string }) => e.status);
      assert.ok(statuses.includes('retry_scheduled'), statuses.join(' '));
    });

    it('slow keeps the action processing for a while, then completes it', async () => {
      const { call } = await accountWithSandbox();
      const res = await call('POST', `${V1}/generate/photo`, photo(), { 'X-Sandbox-Scenario': 'slow' });
      await eventually(() => call('GET', `${V1}/status/${res.body.action_id}`), (s) => s.body.status === 'processing');
      await finish(res.body.action_id);
      const [{ processing_ms }] = await stack.db.query(
        'SELECT extract(epoch FROM completed_at - started_at) * 1000 AS processing_ms FROM actions WHERE id = $1', [res.body.action_id]);
      assert.ok(Number(processing_ms) >= SLOW_MS, `processing for ${processing_ms} ms`);
      assert.equal((await call('GET', `${V1}/status/${res.body.action_id}`)).body.status, 'completed');
    });

    it('webhook_fail_then_succeed answers the first two attempts of each delivery with 500, then delivers', async () => {
      const { call } = await accountWithSandbox();
      assert.equal((await call('POST', `${V1}/webhooks`, { url: `${receiver.url}/sandbox-drill` })).status, 201);
      const res = await call('POST', `${V1}/generate/photo`, photo(), { 'X-Sandbox-Scenario': 'webhook_fail_then_succeed' });
      await finish(res.body.action_id);
      const [delivery] = await eventually(
        () => stack.db.query('SELECT status, attempts, last_status_code FROM webhook_deliveries WHERE action_id = $1', [res.body.action_id]),
        (rows) => rows[0]?.status === 'succeeded');
      assert.deepEqual([delivery.attempts, delivery.last_status_code], [3, 200]);
      assert.equal(deliveriesOf(res.body.action_id).length, 1, 'the failed attempts are not sent');
    });
  });

  it('tops each sandbox up to its daily sparks once a day', async () => {
    const { sandboxId, call } = await accountWithSandbox();
    await call('POST', `${V1}/generate/photo`, photo()).then((r) => finish(r.body.action_id));
    const [before] = await moneyOf(stack.db, [sandboxId]);
    assert.ok(before.balance < 1000);
    assert.ok(await topUpSandboxes(stack.db, 1000) >= 1);
    assert.equal((await moneyOf(stack.db, [sandboxId]))[0].balance, 1000);
    await call('POST', `${V1}/generate/photo`, photo()).then((r) => finish(r.body.action_id));
    await topUpSandboxes(stack.db, 1000);
    assert.equal((await moneyOf(stack.db, [sandboxId]))[0].balance, before.balance, 'once a day');
    await assertMoneyConsistent(stack.db, sandboxId);
  });

  describe('with paid providers selected but not configured', () => {
    let paid: Stack;
    before(async () => {
      const local = new LocalRenderer();
      const gemini = new UnconfiguredProvider('gemini', 'GEMINI_API_KEY is not set');
      const runway = new UnconfiguredProvider('runway', 'RUNWAY_API_KEY is not set');
      paid = await startStack({
        providers: {
          image: gemini, text: gemini, video: runway, sandbox: new SandboxRenderer(local, { slowMs: SLOW_MS }),
          unavailable: { image: 'GEMINI_API_KEY is not set', text: 'GEMINI_API_KEY is not set', video: 'RUNWAY_API_KEY is not set' },
        },
      });
    });
    after(() => paid.stop());

    it('serves a test key\'s analysis, helpers, detected photo, video and funnel card on the sandbox renderer, while live keys get 503', async () => {
      const live = await newAccount(paid.db, 100);
      const test = await createKey(paid.db, live.accountId, 'ci', 'api_key_inbox', { sandbox: { sparks: 1000 } });
      const call = apiClient(paid.baseUrl, test.apiKey);
      const liveCall = apiClient(paid.baseUrl, live.apiKey);
      const finishHere = (actionId: number) => paid.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();

      assert.equal((await liveCall('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).status, 503);
      assert.equal((await liveCall('POST', `${V1}/analyze`, { image: { data: image } })).status, 503);

      const analysis = await call('POST', `${V1}/analyze`, { image: { data: image } });
      assert.equal(analysis.status, 200, JSON.stringify(analysis.body));
      const wishes = await call('POST', `${V1}/wishes/suggest`, { images: [{ data: image }], category_id: 'home', concept_id: 'home_interior', product_name: 'Mug', locale: 'en' });
      assert.equal(wishes.status, 200, JSON.stringify(wishes.body));
      const detected = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] }); // category and name detected
      assert.equal(detected.status, 200, JSON.stringify(detected.body));
      const video = await call('POST', `${V1}/generate/video`, { image: { data: image }, scenario: 'slow turn' });
      assert.equal(video.status, 200, JSON.stringify(video.body));

      const funnel = (await call('POST', `${V1}/funnels`, { images: [{ data: image }], locale: 'en' })).body;
      assert.ok(funnel.funnel_id, JSON.stringify(funnel));
      assert.equal((await call('POST', `${V1}/funnels/${funnel.funnel_id}/idea`)).status, 200);
      assert.equal((await call('POST', `${V1}/funnels/${funnel.funnel_id}/setup`, { aspect_ratio: '1:1', style: 'cinematic' })).status, 200);
      const card = await call('POST', `${V1}/funnels/${funnel.funnel_id}/generate`, { answers: { audience: 'As a gift' }, idea_id: 'idea_1' });
      assert.equal(card.status, 200, JSON.stringify(card.body));

      for (const id of [detected.body.action_id, video.body.action_id, card.body.action_id]) {
        assert.equal((await finishHere(id)).status, 'completed', `action ${id}`);
      }
      assert.ok(await hasSandboxBand(Buffer.from(await (await fetch((await call('GET', `${V1}/status/${card.body.action_id}`)).body.result_url)).arrayBuffer())));
      assert.deepEqual((await liveCall('GET', `${V1}/balance`)).body, { balance: 100, available: 100, holds: 0 });
    });
  });
});
