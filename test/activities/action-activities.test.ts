import { DEFAULT_BATCH_LIMITS } from '../../src/config';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/activity';
import { ActivityCancellationDetails } from '@temporalio/common';
import sharp from 'sharp';
import type { DataSource } from 'typeorm';
import { Activities, createActivities } from '../../activities';
import type { RenderEnd } from '../../activities/render';
import { openDatabase } from '../../src/db/data-source';
import { readBalance } from '../../src/billing/sparks';
import { allFrom } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { FileAssetStore, isValidAssetKey } from '../../src/storage/asset-store';
import { FAILURE_TYPES } from '../../src/temporal/contract';
import { quietLogger, testEnvironment } from '../support/environment';
import { OutboundPolicy } from '../../src/net/outbound';
import { TEST_SECRETS } from '../support/stack';
import { assertMoneyConsistent, jpegBase64, newAccount, placeAction } from '../support/fixtures';

const popcount = (byte: number) => byte.toString(2).replace(/0/g, '').length;

describe('action activities (real Postgres, MockActivityEnvironment)', () => {
  let db: DataSource;
  let activities: Activities;
  let store: FileAssetStore;
  const run = <K extends keyof Activities>(name: K, ...args: Parameters<Activities[K]>) =>
    new MockActivityEnvironment(undefined, { logger: quietLogger }).run(activities[name] as any, ...args) as ReturnType<Activities[K]>;

  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false });
    store = new FileAssetStore(path.join(os.tmpdir(), 'imagery-test-assets'));
    activities = createActivities({ db, store, providers: allFrom(new LocalRenderer()), outbound: new OutboundPolicy(), secrets: TEST_SECRETS, webhookRetryInitialMs: 100,
      config: { taskQueue: 'unused', jobMaxAttempts: 3, jobRetryBackoffMs: 100 }, batchLimits: DEFAULT_BATCH_LIMITS });
  });
  after(() => db.destroy());

  async function storedInput(): Promise<string> {
    const key = `inputs/activity-test-${Date.now()}.jpg`;
    await store.put(key, Buffer.from(await jpegBase64(300, 400), 'base64'));
    return key;
  }

  it('startProcessing moves pending to processing once and says cancelled for a cancelled action', async () => {
    const { accountId } = await newAccount(db, 10);
    const actionId = await placeAction(db, accountId, { hold: 5 });
    assert.equal(await run('startProcessing', actionId), 'started');
    assert.equal(await run('startProcessing', actionId), 'started', 'a retried start is harmless');
    const [row] = await db.query('SELECT status, started_at FROM actions WHERE id = $1', [actionId]);
    assert.equal(row.status, 'processing');
    assert.ok(row.started_at);

    const cancelled = await placeAction(db, accountId);
    await db.query(`UPDATE actions SET status = 'cancelled' WHERE id = $1`, [cancelled]);
    assert.equal(await run('startProcessing', cancelled), 'cancelled');
  });

  it('generateAsset renders a real JPEG of the requested size from the stored input', async () => {
    const { accountId } = await newAccount(db, 10);
    const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], params: { resolution: '1K', aspectRatio: '16:9' } });
    const key = await run('generateAsset', actionId);
    assert.match(key, new RegExp(`^results/${actionId}/[0-9a-f]{32}\\.jpg$`));
    const meta = await sharp(await store.read(key)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 1024, 576]);
  });

  it('generateAsset stores each result under 128 random bits, so its key cannot be derived from the action id', async () => {
    const { accountId } = await newAccount(db, 10);
    const input = await storedInput();
    const [first, second] = [await placeAction(db, accountId, { inputs: [input] }), await placeAction(db, accountId, { inputs: [input] })];
    const keys = [await run('generateAsset', first), await run('generateAsset', second), await run('generateAsset', first)];
    const names = keys.map((key, i) => {
      const [, actionId, name] = /^results\/(\d+)\/([0-9a-f]{32})\.jpg$/.exec(key) ?? [];
      assert.equal(Number(actionId), [first, second, first][i], key);
      assert.ok(isValidAssetKey(key), key);
      return name;
    });
    assert.equal(new Set(names).size, 3, 'a retried render gets a new name too');
    const differingBits = (a: string, b: string) => [...Buffer.from(a, 'hex')].reduce((n, byte, i) => n + popcount(byte ^ Buffer.from(b, 'hex')[i]), 0);
    assert.ok(differingBits(names[0], names[1]) > 16, 'the names of consecutive actions are unrelated');
  });

  it('generateAsset refuses, without retry, an input of more than 50 megapixels instead of decoding it', async () => {
    const { accountId } = await newAccount(db, 10);
    const key = `inputs/huge-${Date.now()}.jpg`;
    await store.put(key, await sharp({ create: { width: 7100, height: 7100, channels: 3, background: '#808080' } }).jpeg().toBuffer());
    const actionId = await placeAction(db, accountId, { inputs: [key] });
    await assert.rejects(run('generateAsset', actionId), (err: unknown) =>
      err instanceof ApplicationFailure && err.nonRetryable === true && /pixel limit/.test(err.message));
  });

  it('generateAsset turns an undecodable input into a non-retryable ProviderRefused failure', async () => {
    const { accountId } = await newAccount(db, 10);
    const key = `inputs/garbage-${Date.now()}.jpg`;
    await store.put(key, Buffer.from('not an image at all'));
    const actionId = await placeAction(db, accountId, { inputs: [key] });
    await assert.rejects(run('generateAsset', actionId), (err: unknown) =>
      err instanceof ApplicationFailure && err.type === FAILURE_TYPES.providerRefused && err.nonRetryable === true);
  });

  it('completeAction charges once and completes once, even when retried', async () => {
    const { accountId } = await newAccount(db, 10);
    const actionId = await placeAction(db, accountId, { hold: 5 });
    await run('startProcessing', actionId);
    assert.equal(await run('completeAction', actionId, 'results/x.jpg'), 'completed');
    assert.equal(await run('completeAction', actionId, 'results/x.jpg'), 'completed');
    const [action] = await db.query('SELECT status, asset_path, card_id FROM actions WHERE id = $1', [actionId]);
    assert.deepEqual([action.status, action.asset_path], ['completed', 'results/x.jpg']);
    const [card] = await db.query('SELECT status, active_action_id FROM cards WHERE id = $1', [action.card_id]);
    assert.deepEqual([card.status, card.active_action_id], ['completed', actionId]);
    assert.deepEqual(await readBalance(db, accountId), { balance: 5, holds: 0, available: 5 });
    await assertMoneyConsistent(db, accountId);
  });

  it('a card\'s active version is its newest completed one by when it was made, whatever the ids (taken ahead per process)', async () => {
    const { accountId } = await newAccount(db, 20);
    const first = await placeAction(db, accountId, { hold: 5 });
    const [{ card_id: cardId, project_id: projectId }] = await db.query('SELECT card_id, project_id FROM actions WHERE id = $1', [first]);
    // An edit made after it, whose id another process took earlier: lower than its parent's.
    const [{ id: edit }] = await db.query(
      `INSERT INTO actions (id, account_id, project_id, card_id, type, product, status, depth, parent_action_id, price, params, created_at)
       VALUES ((SELECT min(id) - 1 FROM actions), $1, $2, $3, 'edit', 'edit', 'pending', 1, $4, 3, '{}', now() + interval '1 second') RETURNING id`,
      [accountId, projectId, cardId, first]);
    await db.query(`INSERT INTO spark_holds (account_id, action_id, amount, status, reserve_at_commit) VALUES ($1, $2, 3, 'held', true)`, [accountId, edit]);
    assert.ok(edit < first);
    assert.equal(await run('completeAction', first, 'results/first.jpg'), 'completed');
    assert.equal(await run('completeAction', edit, 'results/edit.jpg'), 'completed');
    assert.equal((await db.query('SELECT active_action_id FROM cards WHERE id = $1', [cardId]))[0].active_action_id, edit);
    // The older one completing late does not take it back.
    const late = await placeAction(db, accountId, { hold: 2 });
    await db.query(`UPDATE actions SET card_id = $2, created_at = now() - interval '1 hour' WHERE id = $1`, [late, cardId]);
    assert.equal(await run('completeAction', late, 'results/late.jpg'), 'completed');
    assert.equal((await db.query('SELECT active_action_id FROM cards WHERE id = $1', [cardId]))[0].active_action_id, edit);
    await assertMoneyConsistent(db, accountId);
  });

  it('failAction releases the hold once and records the message', async () => {
    const { accountId } = await newAccount(db, 10);
    const actionId = await placeAction(db, accountId, { hold: 5 });
    await run('failAction', actionId, 'The provider refused');
    await run('failAction', actionId, 'The provider refused');
    const [action] = await db.query('SELECT status, error_message FROM actions WHERE id = $1', [actionId]);
    assert.deepEqual([action.status, action.error_message], ['failed', 'The provider refused']);
    assert.deepEqual(await readBalance(db, accountId), { balance: 10, holds: 0, available: 10 });
    await assertMoneyConsistent(db, accountId);
  });

  it('completeAndPlanDeliveries and failAndPlanDeliveries end the action once and plan each delivery once, even when retried', async () => {
    const { accountId } = await newAccount(db, 20);
    const completed = await placeAction(db, accountId, { hold: 5 });
    await db.query('UPDATE actions SET webhook_url = $2 WHERE id = $1', [completed, 'https://receiver.example/hook']);
    await run('startProcessing', completed);
    const first = await run('completeAndPlanDeliveries', completed, 'results/planned.jpg');
    const again = await run('completeAndPlanDeliveries', completed, 'results/planned.jpg');
    assert.equal(first.outcome, 'completed');
    assert.deepEqual(again, first, 'a retry answers the same plan');
    assert.deepEqual(first.plan!.deliveries.map((d) => [d.event, d.registered]), [['generation.completed', false]]);
    assert.equal(first.plan!.retryInitialMs, 100);

    const failed = await placeAction(db, accountId, { hold: 5 });
    const plan = await run('failAndPlanDeliveries', failed, 'The provider refused');
    assert.deepEqual(await run('failAndPlanDeliveries', failed, 'The provider refused'), plan);
    assert.deepEqual(plan.deliveries, [], 'no webhook, no delivery');
    const [{ status }] = await db.query('SELECT status FROM actions WHERE id = $1', [failed]);
    assert.equal(status, 'failed');

    // A failure that finds the action cancelled meanwhile (a cancel through the API) announces nothing.
    const cancelledFirst = await placeAction(db, accountId, { hold: 5 });
    await db.query('UPDATE actions SET webhook_url = $2 WHERE id = $1', [cancelledFirst, 'https://receiver.example/hook']);
    await run('cancelAction', cancelledFirst);
    assert.deepEqual((await run('failAndPlanDeliveries', cancelledFirst, 'The provider refused')).deliveries, []);
    assert.equal((await db.query('SELECT status FROM actions WHERE id = $1', [cancelledFirst]))[0].status, 'cancelled');

    // A completion that finds the action closed elsewhere plans nothing.
    const cancelled = await placeAction(db, accountId, { hold: 5 });
    await db.query('UPDATE actions SET webhook_url = $2 WHERE id = $1', [cancelled, 'https://receiver.example/hook']);
    await run('failAction', cancelled, 'cancelled elsewhere');
    assert.deepEqual(await run('completeAndPlanDeliveries', cancelled, 'results/none.jpg'), { outcome: 'cancelled' });
    assert.equal((await db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE action_id = $1', [cancelled]))[0].n, 0);
    assert.deepEqual(await readBalance(db, accountId), { balance: 15, holds: 0, available: 15 });
    await assertMoneyConsistent(db, accountId);
  });

  it('completeAction after a release (a cancelled action) charges nothing', async () => {
    const { accountId } = await newAccount(db, 10);
    const actionId = await placeAction(db, accountId, { hold: 5 });
    await run('failAction', actionId, 'cancelled elsewhere');
    assert.equal(await run('completeAction', actionId, 'results/y.jpg'), 'cancelled');
    assert.equal((await readBalance(db, accountId)).balance, 10);
    await assertMoneyConsistent(db, accountId);
  });
  it('deliverWebhook sends nothing for a delivery that already succeeded (a second run of its workflow)', async () => {
    const { accountId } = await newAccount(db, 10);
    const actionId = await placeAction(db, accountId, { hold: 5 });
    // Nothing listens at this address: a POST would fail the activity.
    const [delivery] = await db.query(
      `INSERT INTO webhook_deliveries (account_id, action_id, event, url, max_attempts, status, attempts)
       VALUES ($1, $2, 'generation.completed', 'https://localhost:9/hook', 3, 'succeeded', 1) RETURNING id`, [accountId, actionId]);
    assert.equal(await run('deliverWebhook', delivery.id), 'delivered');
    const [row] = await db.query('SELECT status, attempts FROM webhook_deliveries WHERE id = $1', [delivery.id]);
    assert.deepEqual([row.status, row.attempts], ['succeeded', 1]);
  });

  describe('renderAction and endAction (an image action since the settled-render patch)', () => {
    const actionRow = async (actionId: number) =>
      (await db.query('SELECT a.status, a.asset_path, c.status AS card_status FROM actions a JOIN cards c ON c.id = a.card_id WHERE a.id = $1', [actionId]))[0];

    it('renderAction starts, renders, charges and completes in one activity; a retry answers the stored result', async () => {
      const { accountId } = await newAccount(db, 10);
      const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      const end = await run('renderAction', actionId);
      assert.equal(end.status, 'completed');
      const { assetPath } = end as { assetPath: string };
      assert.deepEqual(await actionRow(actionId), { status: 'completed', asset_path: assetPath, card_status: 'completed' });
      assert.equal((await sharp(await store.read(assetPath)).metadata()).format, 'jpeg');
      // The answer of the first attempt was lost: the retry neither renders again (a new key) nor charges again.
      assert.deepEqual(await run('renderAction', actionId), end);
      assert.deepEqual(await readBalance(db, accountId), { balance: 5, holds: 0, available: 5 });
      await assertMoneyConsistent(db, accountId);
    });

    it('renderAction heartbeats its stored result; a retry after a lost worker charges that result, rendering nothing', async () => {
      const { accountId } = await newAccount(db, 40);
      const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      const key = `results/${actionId}/rendered-by-the-lost-attempt.jpg`;
      await store.put(key, Buffer.from(await jpegBase64(64, 64), 'base64'));
      // The first attempt stored `key` and heartbeated it, then its worker died before the charge committed.
      const retry = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { assetPath: key } }, { logger: quietLogger });
      const heartbeats: unknown[] = [];
      retry.on('heartbeat', (details: unknown) => heartbeats.push(details));
      assert.deepEqual(await retry.run(activities.renderAction, actionId), { status: 'completed', assetPath: key });
      assert.deepEqual((await actionRow(actionId)).asset_path, key);
      assert.deepEqual(await readBalance(db, accountId), { balance: 35, holds: 0, available: 35 });
      assert.deepEqual(heartbeats.at(-1), { assetPath: key }, 'the result goes on with the heartbeats while it is charged');
      await assertMoneyConsistent(db, accountId);

      // A heartbeat naming another action's result, or a result that is not stored, is not trusted: it renders anew.
      for (const carried of [key, `results/${actionId + 1}/nothing-here.jpg`]) {
        const other = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
        const end: RenderEnd = await new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { assetPath: carried } }, { logger: quietLogger })
          .run(activities.renderAction, other);
        assert.equal(end.status, 'completed');
        assert.match((end as { assetPath: string }).assetPath, new RegExp(`^results/${other}/`));
      }

      const fresh = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      const first = new MockActivityEnvironment(undefined, { logger: quietLogger });
      const sent: unknown[] = [];
      first.on('heartbeat', (details: unknown) => sent.push(details));
      const end: RenderEnd = await first.run(activities.renderAction, fresh);
      assert.equal(end.status, 'completed');
      assert.deepEqual(sent.at(-1), { assetPath: (end as { assetPath: string }).assetPath }, 'the stored key is heartbeated before the charge');
    });

    it('renderAction renders nothing for an action cancelled before it started', async () => {
      const { accountId } = await newAccount(db, 10);
      const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      await run('cancelAction', actionId);
      assert.deepEqual(await run('renderAction', actionId), { status: 'cancelled' });
      assert.deepEqual(await actionRow(actionId), { status: 'cancelled', asset_path: null, card_status: 'cancelled' });
      assert.deepEqual(await readBalance(db, accountId), { balance: 10, holds: 0, available: 10 });
    });

    it('renderAction answers how an action closed elsewhere ended, rendering nothing: failed with its message', async () => {
      const { accountId } = await newAccount(db, 10);
      const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      await run('failAction', actionId, 'Generation was unavailable');
      // Not this workflow's failure to announce: the API (an abandoned start) or the reconciler ended it.
      assert.deepEqual(await run('renderAction', actionId), { status: 'failed', error: 'Generation was unavailable', endedElsewhere: true });
      assert.deepEqual(await actionRow(actionId), { status: 'failed', asset_path: null, card_status: 'failed' });
      assert.deepEqual(await readBalance(db, accountId), { balance: 10, holds: 0, available: 10 });
    });

    it('renderAction cancelled during the render stops before its last step: nothing charged or completed', async () => {
      const { accountId } = await newAccount(db, 10);
      const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      const env = new MockActivityEnvironment(undefined, { logger: quietLogger });
      const running = env.run(activities.renderAction, actionId);
      env.cancel('CANCELLED', new ActivityCancellationDetails({ cancelRequested: true }));
      await assert.rejects(running);
      assert.equal((await actionRow(actionId)).status, 'processing', 'the workflow ends it (endAction)');
      assert.deepEqual(await readBalance(db, accountId), { balance: 10, holds: 5, available: 5 });
    });

    it('endAction releases and closes as told, once, and answers how the action ended', async () => {
      const { accountId } = await newAccount(db, 20);
      const failing = await placeAction(db, accountId, { hold: 5 });
      await run('startProcessing', failing);
      for (let i = 0; i < 2; i++) assert.deepEqual(await run('endAction', failing, { status: 'failed', error: 'The provider refused' }), { status: 'failed', error: 'The provider refused' });
      const cancelled = await placeAction(db, accountId, { hold: 5 });
      await run('startProcessing', cancelled);
      assert.deepEqual(await run('endAction', cancelled, { status: 'cancelled' }), { status: 'cancelled' });
      assert.deepEqual(await run('endAction', cancelled, { status: 'failed', error: 'too late' }), { status: 'cancelled' }, 'the first ending stands');
      assert.deepEqual(await readBalance(db, accountId), { balance: 20, holds: 0, available: 20 });
      await assertMoneyConsistent(db, accountId);
    });

    it('endAction after the render completed (a cancel that lost the race) answers completed and releases nothing', async () => {
      const { accountId } = await newAccount(db, 10);
      const actionId = await placeAction(db, accountId, { inputs: [await storedInput()], hold: 5 });
      const end = await run('renderAction', actionId);
      assert.deepEqual(await run('endAction', actionId, { status: 'cancelled' }), end);
      assert.equal((await actionRow(actionId)).status, 'completed');
      assert.deepEqual(await readBalance(db, accountId), { balance: 5, holds: 0, available: 5 });
      await assertMoneyConsistent(db, accountId);
    });
  });

  describe('with a v2 job (the fused-steps moves)', () => {
    async function placeJob(accountId: number, options: Parameters<typeof placeAction>[2] = {}): Promise<{ actionId: number; jobId: string }> {
      const actionId = await placeAction(db, accountId, { hold: 5, ...options });
      const [job] = await db.query(
        `INSERT INTO jobs (id, account_id, action_id, type, status, phase) VALUES (gen_random_uuid(), $1, $2, 'generation.execute', 'queued', 'queued') RETURNING id`,
        [accountId, actionId]);
      return { actionId, jobId: job.id };
    }
    const jobRow = async (jobId: string) => (await db.query('SELECT status, phase, attempts, retryable, error_code, error_message, started_at, completed_at FROM jobs WHERE id = $1', [jobId]))[0];

    it('startProcessing claims the job with the action, and stops for a job that already ended', async () => {
      const { accountId } = await newAccount(db, 20);
      const { actionId, jobId } = await placeJob(accountId);
      assert.equal(await run('startProcessing', actionId, jobId), 'started');
      assert.equal(await run('startProcessing', actionId, jobId), 'started', 'a retried start is harmless');
      const job = await jobRow(jobId);
      assert.deepEqual([job.status, job.phase, job.attempts], ['claimed', 'routing', 0]);
      assert.ok(job.started_at);

      // Run again past routing (a workflow task lost mid-render runs its start again): the job is not moved back.
      await db.query(`UPDATE jobs SET status = 'running', phase = 'provider_running', attempts = 1 WHERE id = $1`, [jobId]);
      assert.equal(await run('startProcessing', actionId, jobId), 'started');
      assert.deepEqual(Object.values(await jobRow(jobId)).slice(0, 3), ['running', 'provider_running', 1]);

      const ended = await placeJob(accountId);
      await db.query(`UPDATE jobs SET status = 'cancelled', phase = 'failed' WHERE id = $1`, [ended.jobId]);
      assert.equal(await run('startProcessing', ended.actionId, ended.jobId), 'cancelled');
    });

    it('generateAsset counts the attempt and leaves the job finalizing; a job that ended meanwhile stops it with JobEnded', async () => {
      const { accountId } = await newAccount(db, 20);
      const { actionId, jobId } = await placeJob(accountId, { inputs: [await storedInput()] });
      await run('startProcessing', actionId, jobId);
      assert.match(await run('generateAsset', actionId, jobId), new RegExp(`^results/${actionId}/`));
      assert.deepEqual(Object.values(await jobRow(jobId)).slice(0, 3), ['running', 'finalizing', 1]);

      const ended = await placeJob(accountId, { inputs: [await storedInput()] });
      await db.query(`UPDATE jobs SET status = 'cancelled', phase = 'failed' WHERE id = $1`, [ended.jobId]);
      await assert.rejects(run('generateAsset', ended.actionId, ended.jobId), (err: unknown) =>
        err instanceof ApplicationFailure && err.type === FAILURE_TYPES.jobEnded && err.nonRetryable === true);
      assert.deepEqual(Object.values(await jobRow(ended.jobId)).slice(0, 3), ['cancelled', 'failed', 0]);
    });

    it('completeAction charges and makes the job succeeded/postprocessing in one step, once', async () => {
      const { accountId } = await newAccount(db, 20);
      const { actionId, jobId } = await placeJob(accountId);
      await run('startProcessing', actionId, jobId);
      assert.equal(await run('completeAction', actionId, 'results/z.jpg', jobId), 'completed');
      assert.equal(await run('completeAction', actionId, 'results/z.jpg', jobId), 'completed');
      const job = await jobRow(jobId);
      assert.deepEqual([job.status, job.phase, job.retryable], ['succeeded', 'postprocessing', false]);
      assert.ok(job.completed_at);
      assert.deepEqual(await readBalance(db, accountId), { balance: 15, holds: 0, available: 15 });
      await assertMoneyConsistent(db, accountId);
    });

    it('failAction releases and ends the job dead_letter (or failed) with the message, once', async () => {
      const { accountId } = await newAccount(db, 20);
      const { actionId, jobId } = await placeJob(accountId);
      await run('startProcessing', actionId, jobId);
      const failure = { jobId, status: 'dead_letter', errorCode: 'unavailable', retryable: true } as const;
      await run('failAction', actionId, 'upstream 503', failure);
      await run('failAction', actionId, 'upstream 503', failure);
      const job = await jobRow(jobId);
      assert.deepEqual([job.status, job.phase, job.retryable, job.error_code, job.error_message], ['dead_letter', 'failed', true, 'unavailable', 'upstream 503']);
      assert.deepEqual(await readBalance(db, accountId), { balance: 20, holds: 0, available: 20 });
      await assertMoneyConsistent(db, accountId);
    });
  });
});
