import assert from 'node:assert/strict';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { ProviderError } from '../../src/providers/provider';
import { jobWorkflowId, SEARCH_ATTRIBUTES } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { stepsOf } from '../support/history';
import { ScriptedProvider } from '../support/providers';
import { providerRoute, Stack, startStack } from '../support/stack';

const V2 = '/api/v2';

describe('v2 jobs over HTTP', function () {
  this.timeout(90_000);
  let image: string;
  before(async () => {
    image = await jpegBase64(400, 500, '#c08030');
  });
  const photo = () => ({ images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K' });

  describe('with the local renderer', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack();
    });
    after(() => stack.stop());

    const finish = (jobId: string) => stack.temporal.workflow.getHandle(jobWorkflowId(jobId)).result();

    it('creates a queued generation job and runs it to succeeded, with its own api_v2 project', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const created = await call('POST', `${V2}/jobs/generate`, { ...photo(), project_id: 123456 });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const job = created.body;
      assert.match(job.job_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.deepEqual({ ...job, job_id: 0, resource_id: 0 }, {
        job_id: 0, status: 'queued', type: 'generation.execute', status_url: `${V2}/jobs/${job.job_id}`,
        cancel_url: `${V2}/jobs/${job.job_id}/cancel`, result_url: `${V2}/jobs/${job.job_id}/result`, resource_id: 0, first_check_after_sec: 2,
        price: 5, held: 5, charged: 0,
      });
      assert.equal((await finish(job.job_id)).status, 'succeeded');

      const done = (await call('GET', job.status_url)).body;
      assert.deepEqual([done.status, done.phase, done.retryable, done.error_code, done.error_message, done.check_again_in_sec], ['succeeded', 'completed', false, null, null, null]);
      assert.equal(done.resource_id, job.resource_id);
      assert.ok(done.started_at && done.completed_at && done.created_at);
      assert.equal(done.result.action_id, job.resource_id);
      assert.equal((await fetch(done.result.result_url)).status, 200);
      const [project] = await stack.db.query('SELECT source FROM projects WHERE id = $1', [done.result.project_id]);
      assert.equal(project.source, 'api_v2', 'its own project; project_id does not apply');
      assert.deepEqual((await call('GET', `${V1}/projects`)).body.items, [], 'hidden from the default project list');
      assert.equal((await call('GET', `${V1}/projects?source=all`)).body.items.length, 1);

      const result = await call('GET', job.result_url);
      assert.equal(result.status, 302);
      assert.equal((await fetch(result.headers.get('location')!)).status, 200);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15);
      await assertMoneyConsistent(stack.db, accountId);

      const description = await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).describe();
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.jobId), job.job_id);
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.jobStatus), 'succeeded');
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.jobPhase), 'completed');
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.accountId), accountId);
    });

    it('moves the read model through every status and phase in order, every step (the in-process render too) in its worker', async () => {
      // Every move of the job as Postgres sees it, however briefly a poll could have seen it.
      await stack.db.query(`CREATE TABLE IF NOT EXISTS test_job_moves (job_id uuid, status text, phase text, attempts int, at timestamptz DEFAULT clock_timestamp())`);
      await stack.db.query(`CREATE OR REPLACE FUNCTION test_record_job_move() RETURNS trigger AS $$
        BEGIN INSERT INTO test_job_moves (job_id, status, phase, attempts) VALUES (NEW.id, NEW.status, NEW.phase, NEW.attempts); RETURN NEW; END $$ LANGUAGE plpgsql`);
      await stack.db.query(`CREATE OR REPLACE TRIGGER test_job_moves AFTER INSERT OR UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION test_record_job_move()`);
      try {
        const { apiKey } = await newAccount(stack.db, 20);
        const job = (await apiClient(stack.baseUrl, apiKey)('POST', `${V2}/jobs/generate`, photo())).body;
        assert.equal((await finish(job.job_id)).status, 'succeeded');
        const moves = await stack.db.query('SELECT status, phase, attempts FROM test_job_moves WHERE job_id = $1 ORDER BY at', [job.job_id]);
        assert.deepEqual(moves.map((m: { status: string; phase: string; attempts: number }) => `${m.status}/${m.phase}/${m.attempts}`), [
          'queued/queued/0', 'claimed/routing/0', 'running/provider_reserved/1', 'running/provider_running/1', 'running/finalizing/1',
          'succeeded/postprocessing/1', 'succeeded/completed/1',
        ]);
        const history = await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).fetchHistory();
        assert.deepEqual(stepsOf(history.events!).map((step) => `${step.type}@${step.queue}`),
          ['startProcessing@local', 'generateAsset@local', 'completeJob@local'], 'no activity task: every step in the worker');
      } finally {
        await stack.db.query('DROP TRIGGER IF EXISTS test_job_moves ON jobs');
      }
    });

    it('runs again after it succeeded (a workflow task lost after the charge, a reset): succeeded as recorded, the job not moved back', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
      const first = await finish(job.job_id);
      assert.equal(first.status, 'succeeded');
      const row = async () => (await stack.db.query('SELECT status, phase, attempts, updated_at FROM jobs WHERE id = $1', [job.job_id]))[0];
      const before = await row();
      const again = await stack.temporal.workflow.execute('jobWorkflow', {
        taskQueue: stack.taskQueue, workflowId: `${jobWorkflowId(job.job_id)}-again`,
        args: [{ jobId: job.job_id, actionId: job.resource_id, maxAttempts: 3, backoffMs: 200, provider: providerRoute(stack, 'photo') }],
      });
      assert.deepEqual(again, first, 'the recorded result, not a second one');
      assert.deepEqual(await row(), before, 'not claimed, counted or moved again');
      assert.deepEqual([before.status, before.phase, before.attempts], ['succeeded', 'completed', 1]);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15, 'charged once');
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('runs an edit job on a completed action (type edit.execute)', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const source = (await call('POST', `${V2}/jobs/generate`, photo())).body;
      await finish(source.job_id);
      const edit = await call('POST', `${V2}/jobs/edit`, { action_id: source.resource_id, instruction: 'warmer' });
      assert.equal(edit.status, 202, JSON.stringify(edit.body));
      assert.equal(edit.body.type, 'edit.execute');
      assert.equal((await finish(edit.body.job_id)).status, 'succeeded');
      const job = (await call('GET', edit.body.status_url)).body;
      assert.equal(job.status, 'succeeded');
      const [action] = await stack.db.query('SELECT parent_action_id, depth FROM actions WHERE id = $1', [edit.body.resource_id]);
      assert.deepEqual([action.parent_action_id, action.depth], [source.resource_id, 1]);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 12);
      await assertMoneyConsistent(stack.db, accountId);

      const pending = (await call('POST', `${V2}/jobs/edit`, { action_id: 99999999, instruction: 'x' }));
      assert.deepEqual([pending.status, pending.body.detail.error], [404, 'not_found']);
    });

    it('the same 404 for unknown, malformed and foreign job ids', async () => {
      const owner = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const job = (await owner('POST', `${V2}/jobs/generate`, photo())).body;
      await finish(job.job_id);
      const answers = [
        await stranger('GET', `${V2}/jobs/${job.job_id}`),
        await owner('GET', `${V2}/jobs/00000000-0000-4000-8000-000000000000`),
        await owner('GET', `${V2}/jobs/not-a-uuid`),
        await stranger('POST', `${V2}/jobs/${job.job_id}/cancel`),
        await stranger('GET', `${V2}/jobs/${job.job_id}/result`),
      ];
      for (const res of answers) {
        assert.equal(res.status, 404);
        assert.deepEqual(res.body, { detail: { error: 'not_found', message: 'Job not found' } });
      }
    });

    it('Idempotency-Key: concurrent duplicates make one job and one generation; a different body is refused', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const answers = await Promise.all(Array.from({ length: 5 }, () => call('POST', `${V2}/jobs/generate`, photo(), { 'Idempotency-Key': 'v2-burst' })));
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([202]));
      assert.equal(new Set(answers.map((a) => a.body.job_id)).size, 1);
      await finish(answers[0].body.job_id);
      const [{ jobs }] = await stack.db.query('SELECT count(*)::int AS jobs FROM jobs WHERE account_id = $1', [accountId]);
      assert.equal(jobs, 1);
      const later = await call('POST', `${V2}/jobs/generate`, photo(), { 'Idempotency-Key': 'v2-burst' });
      assert.deepEqual([later.status, later.headers.get('idempotent-replayed'), later.body.job_id], [202, 'true', answers[0].body.job_id], 'a later repeat is the same 202');
      const changed = await call('POST', `${V2}/jobs/generate`, { ...photo(), product_name: 'Other' }, { 'Idempotency-Key': 'v2-burst' });
      assert.deepEqual([changed.status, changed.body.detail.error], [409, 'idempotency_conflict']);
      assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('fires webhooks for jobs through the same delivery workflow', async () => {
      const { startHttpsServer } = await import('../support/https-server');
      const receiver = await startHttpsServer((_req, res) => void res.writeHead(200).end());
      try {
        const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
        const job = (await call('POST', `${V2}/jobs/generate`, { ...photo(), webhook_url: `${receiver.url}/v2-hook` })).body;
        await finish(job.job_id);
        await eventually(async () => receiver.requests.length, (n) => n === 1);
        assert.equal(receiver.requests[0].headers['x-service-event'], 'generation.completed');
        assert.equal(JSON.parse(receiver.requests[0].body.toString()).action_id, job.resource_id);
      } finally {
        await receiver.close();
      }
    });

    it('cancel of a finished job changes nothing', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
      await finish(job.job_id);
      const res = await call('POST', job.cancel_url);
      assert.deepEqual(res.body, { job_id: job.job_id, status: 'succeeded', cancelled: false, message: 'The job already ended as succeeded' });
    });
  });

  describe('cancel before a worker picks the job up', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ withWorker: false });
    });
    after(() => stack.stop());

    it('ends cancelled at once (cancelled: true) and releases the hold', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
      const polled = (await call('GET', job.status_url)).body;
      assert.deepEqual([polled.status, polled.phase, polled.check_again_in_sec], ['queued', 'queued', 2]);
      const notReady = await call('GET', job.result_url);
      assert.deepEqual([notReady.status, notReady.body.status], [202, 'queued']);
      assert.ok(notReady.body.message);

      const cancel = await call('POST', job.cancel_url);
      assert.deepEqual([cancel.body.status, cancel.body.cancelled], ['cancelled', true]);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      const after = (await call('GET', job.status_url)).body;
      assert.deepEqual([after.status, after.check_again_in_sec], ['cancelled', null]);
      const result = await call('GET', job.result_url);
      assert.deepEqual([result.status, result.body.status], [409, 'cancelled']);
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  describe('cancel while running', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ provider: new LocalRenderer({ delayMs: 30_000 }) });
    });
    after(() => stack.stop());

    it('answers cancelled: false, "Cancel requested", and the job stops at its next safe point', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
      const running = await eventually(async () => (await call('GET', job.status_url)).body, (j) => j.phase === 'provider_running');
      assert.equal(running.status, 'running');
      assert.ok(running.check_again_in_sec >= 25, `hint from the provider's typical time: ${running.check_again_in_sec}`);
      const cancel = await call('POST', job.cancel_url);
      assert.deepEqual(cancel.body, { job_id: job.job_id, status: 'running', cancelled: false, message: 'Cancel requested' });
      assert.deepEqual(await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result(), { status: 'cancelled' });
      assert.equal((await call('GET', job.status_url)).body.status, 'cancelled');
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  describe('cancel after the worker stopped mid-render', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ withWorker: false });
    });
    after(() => stack.stop());

    it('ends cancelled at once (cancelled: true) and releases the hold', async () => {
      const { startServiceProcess } = await import('../../ops/cluster/service-process');
      const { testEnvironment } = await import('../support/environment');
      const os = await import('node:os');
      const path = await import('node:path');
      const worker = await startServiceProcess('worker', {
        DATABASE_URL: testEnvironment().databaseUrl, TEMPORAL_ADDRESS: testEnvironment().temporalAddress,
        TEMPORAL_TASK_QUEUE: stack.taskQueue, ASSETS_DIR: path.join(os.tmpdir(), 'imagery-test-assets'),
        DATA_DIR: path.join(os.tmpdir(), `imagery-worker-${process.pid}`), LOCAL_RENDERER_DELAY_MS: '60000',
      });
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
      await eventually(async () => (await call('GET', job.status_url)).body.phase, (phase) => phase === 'provider_running');
      await worker.kill('SIGKILL');
      // The render's heartbeat stops; once it is past the heartbeat timeout the job has no live worker.
      const handle = stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id));
      await eventually(async () => (await handle.describe()).raw.pendingActivities ?? [],
        (pending) => !pending.some((a) => Number(a.state) === 2 && Date.now() / 1000 - Number(a.lastHeartbeatTime?.seconds ?? a.lastStartedTime?.seconds ?? 0) < 10), 30_000);
      await eventually(async () => (await stack.db.query('SELECT extract(epoch FROM now() - updated_at) AS age FROM jobs WHERE id = $1', [job.job_id]))[0].age,
        (age) => Number(age) > 10.5, 30_000);
      const cancel = await call('POST', job.cancel_url);
      assert.deepEqual([cancel.body.status, cancel.body.cancelled], ['cancelled', true]);
      assert.equal((await call('GET', job.status_url)).body.status, 'cancelled');
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  describe('provider failures', () => {
    it('fails twice, then succeeds: retry_scheduled between attempts, charged once', async () => {
      const provider = new ScriptedProvider([new ProviderError('upstream 503', 'unavailable', true), new ProviderError('upstream timeout', 'timeout', true)]);
      const stack = await startStack({ provider, jobRetryBackoffMs: 1500 });
      try {
        const { accountId, apiKey } = await newAccount(stack.db, 20);
        const call = apiClient(stack.baseUrl, apiKey);
        const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
        const scheduled = await eventually(async () => (await call('GET', job.status_url)).body, (j) => j.status === 'retry_scheduled');
        assert.deepEqual([scheduled.retryable, scheduled.error_code, scheduled.error_message], [true, 'unavailable', 'upstream 503']);
        assert.ok(scheduled.check_again_in_sec >= 1 && scheduled.check_again_in_sec <= 2, `${scheduled.check_again_in_sec}`);
        assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'succeeded');
        const done = (await call('GET', job.status_url)).body;
        assert.deepEqual([done.status, done.error_code], ['succeeded', null]);
        assert.equal(provider.calls, 3);
        const [{ attempts }] = await stack.db.query('SELECT attempts FROM jobs WHERE id = $1', [job.job_id]);
        assert.equal(attempts, 3);
        assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15);
        await assertMoneyConsistent(stack.db, accountId);
      } finally {
        await stack.stop();
      }
    });

    it('cancel while a retry is scheduled ends cancelled at once', async () => {
      const stack = await startStack({ provider: new ScriptedProvider([new ProviderError('upstream 503', 'unavailable', true)]), jobRetryBackoffMs: 60_000 });
      try {
        const { accountId, apiKey } = await newAccount(stack.db, 20);
        const call = apiClient(stack.baseUrl, apiKey);
        const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
        const scheduled = await eventually(async () => (await call('GET', job.status_url)).body, (j) => j.status === 'retry_scheduled');
        assert.ok(scheduled.check_again_in_sec > 50, 'the hint is the backoff left');
        const cancel = await call('POST', job.cancel_url);
        assert.deepEqual([cancel.body.status, cancel.body.cancelled], ['cancelled', true]);
        assert.deepEqual(await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result(), { status: 'cancelled' });
        assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
        await assertMoneyConsistent(stack.db, accountId);
      } finally {
        await stack.stop();
      }
    });

    it('always fails: dead_letter, retryable, hold released', async () => {
      const failure = () => new ProviderError('upstream 503', 'unavailable', true);
      const stack = await startStack({ provider: new ScriptedProvider([failure(), failure(), failure()]), jobRetryBackoffMs: 100 });
      try {
        const { accountId, apiKey } = await newAccount(stack.db, 20);
        const call = apiClient(stack.baseUrl, apiKey);
        const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
        assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'dead_letter');
        const done = (await call('GET', job.status_url)).body;
        assert.deepEqual([done.status, done.phase, done.retryable, done.error_code, done.result, done.check_again_in_sec], ['dead_letter', 'failed', true, 'unavailable', null, null]);
        assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
        assert.equal((await call('GET', `${V1}/status/${job.resource_id}`)).body.status, 'failed');
        await assertMoneyConsistent(stack.db, accountId);
      } finally {
        await stack.stop();
      }
    });

    it('a permanent refusal: failed, not retryable, one attempt', async () => {
      const provider = new ScriptedProvider([new ProviderError('content policy', 'content_policy', false)]);
      const stack = await startStack({ provider, jobRetryBackoffMs: 100 });
      try {
        const { accountId, apiKey } = await newAccount(stack.db, 20);
        const call = apiClient(stack.baseUrl, apiKey);
        const job = (await call('POST', `${V2}/jobs/generate`, photo())).body;
        assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'failed');
        const done = (await call('GET', job.status_url)).body;
        assert.deepEqual([done.status, done.retryable, done.error_code, done.error_message], ['failed', false, 'content_policy', 'content policy']);
        assert.equal(provider.calls, 1);
        const result = await call('GET', job.result_url);
        assert.deepEqual([result.status, result.body.status, result.body.error_code], [409, 'failed', 'content_policy']);
        await assertMoneyConsistent(stack.db, accountId);
      } finally {
        await stack.stop();
      }
    });
  });
});
