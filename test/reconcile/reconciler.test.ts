import assert from 'node:assert/strict';
import { ADVISORY_LOCKS } from '../../src/db/data-source';
import { settleHold } from '../../src/billing/sparks';
import { abandonStart, closeAction, releaseAndClose, completeRendered } from '../../src/actions/lifecycle';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { actionWorkflowId, announcementWorkflowId, deliveryWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { announceUnannouncedOutcomes, reconcileExclusively, reconcileLostWorkflows, settleLostDeliveries, settleStarts } from '../../src/actions/reconcile';
import { startActionWorkflow } from '../../src/temporal/starts';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, placeAction, V1 } from '../support/fixtures';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { Stack, startStack } from '../support/stack';

const V2 = '/api/v2';

/**
 * What an operator's buttons and lost workflows do to money: terminated or missing workflows are reconciled (hold
 * released, action failed, failure event sent), cancels are honest in those states, starts left in flight are
 * settled, and settlement locks are taken in one order.
 */
describe('reconciler and honest cancels', function () {
  this.timeout(90_000);
  let stack: Stack;
  let receiver: TestHttpsServer;
  let image: string;
  before(async () => {
    // Renders take a minute, so every action stays `processing` until the test acts on it.
    stack = await startStack({ provider: new LocalRenderer({ delayMs: 60_000 }) });
    receiver = await startHttpsServer((_req, res) => void res.writeHead(204).end());
    image = await jpegBase64(400, 500, '#30a060');
  });
  after(async () => {
    await receiver.close();
    await stack.stop();
  });

  const photo = (extra: object = {}) => ({ images: [{ data: image }], product_name: 'Lamp', category_id: 'home', ...extra });
  const terminate = (workflowId: string) => stack.temporal.workflow.getHandle(workflowId).terminate('operator pressed Terminate');
  const passConfig = () => ({ taskQueue: stack.taskQueue, graceSeconds: 0, webhookRetryInitialMs: 200 });
  const reconcileNow = () => reconcileLostWorkflows(stack.db, stack.temporal, passConfig());
  const actionRow = async (id: number) => (await stack.db.query('SELECT status, error_message, start_state FROM actions WHERE id = $1', [id]))[0];
  const jobRow = async (id: string) => (await stack.db.query('SELECT status, phase, retryable, error_code FROM jobs WHERE id = $1', [id]))[0];

  async function processingAction(call: ReturnType<typeof apiClient>, extra: object = {}): Promise<number> {
    const res = await call('POST', `${V1}/generate/photo`, photo(extra));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await eventually(() => call('GET', `${V1}/status/${res.body.action_id}`), (r) => r.body.status === 'processing');
    return res.body.action_id;
  }

  async function runningJob(call: ReturnType<typeof apiClient>): Promise<{ job_id: string; resource_id: number }> {
    const res = await call('POST', `${V2}/jobs/generate`, photo());
    assert.equal(res.status, 202, JSON.stringify(res.body));
    await eventually(() => call('GET', `${V2}/jobs/${res.body.job_id}`), (r) => r.body.phase === 'provider_running');
    return res.body;
  }

  it('fails an action whose workflow an operator terminated mid-render, releases its hold and sends the failure event once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const actionId = await processingAction(call, { webhook_url: `${receiver.url}/hooks/${accountId}` });
    assert.equal((await call('GET', `${V1}/balance`)).body.holds, 5);
    await terminate(actionWorkflowId(actionId));

    assert.ok((await reconcileNow()) >= 1);
    assert.deepEqual(await actionRow(actionId), { status: 'failed', error_message: 'Processing was stopped by an operator', start_state: 'started' });
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);

    await stack.temporal.workflow.getHandle(announcementWorkflowId(actionId, 'failed')).result();
    const hooks = await eventually(async () => receiver.requests.filter((r) => r.path === `/hooks/${accountId}`), (r) => r.length === 1);
    assert.equal(hooks[0].headers['x-service-event'], 'generation.failed');
    assert.equal(JSON.parse(hooks[0].body.toString()).action_id, actionId);

    await reconcileNow(); // a second pass finds nothing more to do for it
    assert.equal((await actionRow(actionId)).status, 'failed');
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('fails a lost workflow behind more than a page of open actions whose workflows still run', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    // 150 open actions whose workflows run (on a queue nobody serves), all with lower ids than the lost one.
    const running: number[] = [];
    for (let i = 0; i < 150; i++) running.push(await placeAction(stack.db, accountId));
    await stack.db.query(`UPDATE actions SET status = 'processing', start_state = 'started' WHERE id = ANY($1)`, [running]);
    const queue = `nobody-polls-${accountId}`;
    await Promise.all(running.map((id) => stack.temporal.workflow.start('actionWorkflow', { taskQueue: queue, workflowId: actionWorkflowId(id) })));
    try {
      const lost = await processingAction(apiClient(stack.baseUrl, apiKey));
      await terminate(actionWorkflowId(lost));
      assert.ok((await reconcileNow()) >= 1);
      assert.equal((await actionRow(lost)).status, 'failed');
      assert.deepEqual(new Set((await stack.db.query('SELECT status FROM actions WHERE id = ANY($1)', [running])).map((r: { status: string }) => r.status)), new Set(['processing']));
    } finally {
      await Promise.all(running.map((id) => terminate(actionWorkflowId(id))));
      await stack.db.query(`UPDATE actions SET status = 'failed', completed_at = now() WHERE id = ANY($1)`, [running]);
    }
  });

  it('makes one pass at a time in the deployment: a pass while another holds the reconciler\'s lock is skipped, the next one works', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const actionId = await processingAction(call);
    await terminate(actionWorkflowId(actionId));
    const { Client } = await import('pg');
    const { testEnvironment } = await import('../support/environment');
    const peer = new Client({ connectionString: testEnvironment().databaseUrl });
    await peer.connect();
    try {
      await peer.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.reconciler]); // another worker process mid-pass
      assert.equal(await reconcileExclusively(stack.db, stack.temporal, passConfig()), false);
      assert.equal((await actionRow(actionId)).status, 'processing', 'left to the pass under way');
    } finally {
      await peer.end(); // that process's pass ends (or the process dies): the lock goes with its session
    }
    assert.equal(await reconcileExclusively(stack.db, stack.temporal, passConfig()), true);
    assert.equal((await actionRow(actionId)).status, 'failed');
    const held = await stack.db.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1`, [ADVISORY_LOCKS.reconciler]);
    assert.equal(held[0].n, 0, 'the lock is given back after the pass');
  });

  it('sends the completion event of an action its render completed after an operator terminated its workflow, once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const actionId = await processingAction(call, { webhook_url: `${receiver.url}/completed/${accountId}` });
    await terminate(actionWorkflowId(actionId));
    // The render, still running on its worker, ends as renderAction ends one: charged and completed.
    assert.equal(await stack.db.transaction((m) => completeRendered(m, actionId, `results/${actionId}/done.jpg`)), 'completed');
    await reconcileNow(); // a pass over the whole database: other tests' actions may move, this one must not
    assert.equal((await actionRow(actionId)).status, 'completed', 'a completed action is not failed');

    const announce = () => announceUnannouncedOutcomes(stack.db, stack.temporal, passConfig());
    assert.ok((await announce()) >= 1);
    await stack.temporal.workflow.getHandle(announcementWorkflowId(actionId, 'completed')).result();
    const hooks = await eventually(async () => receiver.requests.filter((r) => r.path === `/completed/${accountId}`), (r) => r.length === 1);
    assert.equal(hooks[0].headers['x-service-event'], 'generation.completed');
    await announce(); // its delivery is recorded: not announced again
    const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE action_id = $1', [actionId]);
    assert.equal(n, 1);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('sends the failure event of an action the reconciler failed but could not announce (the next pass does), once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const actionId = await processingAction(call, { webhook_url: `${receiver.url}/unannounced-failure/${accountId}` });
    await terminate(actionWorkflowId(actionId));
    // The lost-workflow pass's transaction, whose announcement could not be started (Temporal away at that moment).
    await stack.db.transaction((m) => releaseAndClose(m, actionId, 'failed', 'Processing was stopped by an operator', { errorCode: 'workflow_lost', retryable: true }));

    const announce = () => announceUnannouncedOutcomes(stack.db, stack.temporal, passConfig());
    assert.ok((await announce()) >= 1);
    await stack.temporal.workflow.getHandle(announcementWorkflowId(actionId, 'failed')).result();
    const hooks = await eventually(async () => receiver.requests.filter((r) => r.path === `/unannounced-failure/${accountId}`), (r) => r.length === 1);
    assert.equal(hooks[0].headers['x-service-event'], 'generation.failed');
    await announce();
    const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE action_id = $1', [actionId]);
    assert.equal(n, 1, 'announced once');
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('reads only the completions since the last pass\'s horizon (a minute of margin), not a whole day every pass', async () => {
    const { accountId } = await newAccount(stack.db, 20);
    const announce = () => announceUnannouncedOutcomes(stack.db, stack.temporal, passConfig());
    await announce();
    const [{ horizon }] = await stack.db.query(`SELECT horizon FROM reconciler_progress WHERE pass = 'announcements'`);
    // An unannounced completion from before the horizon (and its margin), with a subscriber and no workflow.
    const actionId = await placeAction(stack.db, accountId);
    await stack.db.query(`UPDATE actions SET status = 'completed', start_state = 'started', webhook_url = $2,
                                 completed_at = $3::timestamptz - interval '2 minutes' WHERE id = $1`, [actionId, `${receiver.url}/behind/${accountId}`, horizon]);
    await announce();
    assert.equal((await stack.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE action_id = $1', [actionId]))[0].n, 0, 'behind the horizon: not read');
    // With the horizon gone (a new database), a pass reads the last day again and finds it.
    await stack.db.query(`DELETE FROM reconciler_progress WHERE pass = 'announcements'`);
    assert.ok((await announce()) >= 1);
    await stack.temporal.workflow.getHandle(announcementWorkflowId(actionId, 'completed')).result();
    await eventually(async () => receiver.requests.filter((r) => r.path === `/behind/${accountId}`).length, (n) => n === 1);
  });

  it('keeps its horizon at a completion whose workflow still runs, and announces it once that workflow ends without announcing', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const actionId = await processingAction(call, { webhook_url: `${receiver.url}/still-running/${accountId}` });
    // Completed (as a render of a workflow started before `visible-steps` completes it itself) while its workflow runs on.
    await stack.db.query(`UPDATE actions SET status = 'completed', completed_at = now() - interval '30 seconds' WHERE id = $1`, [actionId]);
    const announce = () => announceUnannouncedOutcomes(stack.db, stack.temporal, passConfig());
    await announce();
    const [{ held }] = await stack.db.query(
      `SELECT horizon <= (SELECT completed_at FROM actions WHERE id = $1) AS held FROM reconciler_progress WHERE pass = 'announcements'`, [actionId]);
    assert.equal(held, true, 'the horizon waits at the running workflow\'s completion');
    await terminate(actionWorkflowId(actionId)); // ends without announcing
    assert.ok((await announce()) >= 1);
    await stack.temporal.workflow.getHandle(announcementWorkflowId(actionId, 'completed')).result();
    await eventually(async () => receiver.requests.filter((r) => r.path === `/still-running/${accountId}`).length, (n) => n === 1);
  });

  it('closes a pending delivery whose workflow an operator terminated (failed, redeliverable), and starts one whose workflow never started', async () => {
    const hanging = await startHttpsServer(() => undefined); // answers nothing: the attempt waits
    try {
      const { accountId, apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const hook = await call('POST', `${V1}/webhooks`, { url: `${hanging.url}/hang`, events: ['generation.failed'] });
      assert.equal(hook.status, 201, JSON.stringify(hook.body));
      const actionId = await processingAction(call);
      await terminate(actionWorkflowId(actionId));
      await reconcileNow(); // fails it and announces the failure to the hanging receiver
      const [delivery] = await eventually(() => stack.db.query('SELECT id FROM webhook_deliveries WHERE action_id = $1', [actionId]), (rows) => rows.length === 1);
      await eventually(async () => hanging.requests.length, (n) => n > 0);
      await terminate(deliveryWorkflowId(delivery.id));

      // A delivery planned whose workflow start was lost: an ad-hoc one to the answering receiver.
      const [orphan] = await stack.db.query(
        `INSERT INTO webhook_deliveries (account_id, action_id, event, url, max_attempts) VALUES ($1, $2, 'generation.failed', $3, 3) RETURNING id`,
        [accountId, actionId, `${receiver.url}/orphan/${accountId}`]);

      assert.ok((await settleLostDeliveries(stack.db, stack.temporal, passConfig())) >= 2);
      const [closed] = await stack.db.query('SELECT status, last_error FROM webhook_deliveries WHERE id = $1', [delivery.id]);
      assert.deepEqual(closed, { status: 'failed', last_error: 'Delivery stopped: its workflow ended (terminated)' });
      await stack.temporal.workflow.getHandle(deliveryWorkflowId(orphan.id)).result();
      const [sent] = await stack.db.query('SELECT status, attempts FROM webhook_deliveries WHERE id = $1', [orphan.id]);
      assert.deepEqual(sent, { status: 'succeeded', attempts: 1 });
      assert.equal(receiver.requests.filter((r) => r.path === `/orphan/${accountId}`).length, 1);

      await settleLostDeliveries(stack.db, stack.temporal, passConfig()); // a second pass changes neither
      assert.deepEqual(await stack.db.query('SELECT status FROM webhook_deliveries WHERE id = ANY($1) ORDER BY id = $2', [[delivery.id, orphan.id], orphan.id]),
        [{ status: 'failed' }, { status: 'succeeded' }]);
      assert.equal(receiver.requests.filter((r) => r.path === `/orphan/${accountId}`).length, 1, 'not sent again');
      const redelivery = await call('POST', `${V1}/webhooks/${hook.body.id}/deliveries/${delivery.id}/redeliver`);
      assert.equal(redelivery.status, 202, JSON.stringify(redelivery.body));
      await terminate(deliveryWorkflowId(delivery.id));
    } finally {
      await hanging.close();
    }
  });

  it('fails a v2 job whose workflow was terminated (workflow_lost, retryable) and releases its hold', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const job = await runningJob(call);
    await terminate(jobWorkflowId(job.job_id));
    await reconcileNow();
    assert.deepEqual(await jobRow(job.job_id), { status: 'failed', phase: 'failed', retryable: true, error_code: 'workflow_lost' });
    assert.equal((await actionRow(job.resource_id)).status, 'failed');
    assert.equal((await call('GET', `${V1}/balance`)).body.available, 20);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('v1 cancel of a processing action whose workflow is gone cancels it at once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const actionId = await processingAction(call);
    await terminate(actionWorkflowId(actionId));
    const res = await call('POST', `${V1}/cancel/${actionId}`);
    assert.deepEqual([res.status, res.body.status, res.body.cancelled], [200, 'cancelled', true]);
    assert.equal((await actionRow(actionId)).status, 'cancelled');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('v2 cancel of a job stuck in running/finalizing whose workflow is gone cancels it at once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const job = await runningJob(call);
    await terminate(jobWorkflowId(job.job_id));
    await stack.db.query(`UPDATE jobs SET phase = 'finalizing' WHERE id = $1`, [job.job_id]);
    const res = await call('POST', `${V2}/jobs/${job.job_id}/cancel`);
    assert.deepEqual(res.body, { job_id: job.job_id, status: 'cancelled', cancelled: true, message: 'Cancelled; held sparks were released' });
    assert.equal((await jobRow(job.job_id)).status, 'cancelled');
    assert.equal((await actionRow(job.resource_id)).status, 'cancelled');
    assert.equal((await call('GET', `${V1}/balance`)).body.available, 20);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('v1 cancel of a running v2 job\'s action cancels the job through its workflow', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const job = await runningJob(call);
    const res = await call('POST', `${V1}/cancel/${job.resource_id}`);
    assert.deepEqual([res.status, res.body.action_id, res.body.cancelled, res.body.message], [200, job.resource_id, false, 'Cancel requested']);
    assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'cancelled');
    assert.equal((await jobRow(job.job_id)).status, 'cancelled');
    assert.equal((await call('GET', `${V1}/status/${job.resource_id}`)).body.status, 'cancelled');
    assert.equal((await call('GET', `${V1}/balance`)).body.available, 20);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('settles starts left in flight: confirmed when the workflow exists, abandoned (released, failed) when it does not', async () => {
    const { accountId } = await newAccount(stack.db, 20);
    const lost = await placeAction(stack.db, accountId, { hold: 5 });
    const started = await placeAction(stack.db, accountId, { hold: 5 });
    const fresh = await placeAction(stack.db, accountId, { hold: 5 });
    await stack.db.query(`UPDATE actions SET start_state = 'starting', created_at = now() - interval '5 minutes' WHERE id = ANY($1)`, [[lost, started]]);
    await stack.db.query(`UPDATE actions SET start_state = 'starting' WHERE id = $1`, [fresh]);
    await startActionWorkflow(stack.temporal, stack.taskQueue, { id: started, accountId, type: 'generate', product: 'photo' });

    assert.ok((await settleStarts(stack.db, stack.temporal, 60)) >= 1);
    assert.deepEqual(await actionRow(lost), { status: 'failed', error_message: 'Generation was unavailable', start_state: 'abandoned' });
    assert.equal((await actionRow(started)).start_state, 'started');
    assert.equal((await actionRow(fresh)).start_state, 'starting', 'a start still within its grace is left to its request');
    const [{ held }] = await stack.db.query('SELECT held FROM accounts WHERE id = $1', [accountId]);
    assert.equal(held, 10, 'only the abandoned hold was released');
    await assertMoneyConsistent(stack.db, accountId);
    await terminate(actionWorkflowId(started));
    await stack.db.transaction((m) => abandonStart(m, fresh));
  });

  it('a repeat of an Idempotency-Key whose first start is still in flight waits, and is a new request when that start is abandoned', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const headers = { 'Idempotency-Key': `in-flight-${accountId}` };
    const first = await call('POST', `${V1}/generate/photo`, photo(), headers);
    assert.equal(first.status, 200);
    // The key as a first request leaves it between its commit and its start: its action `starting`, no workflow of
    // it in Temporal yet (an action of its own, with a hold, that no workflow was started for).
    const inFlight = await placeAction(stack.db, accountId, { hold: 5 });
    await stack.db.query(`UPDATE actions SET start_state = 'starting' WHERE id = $1`, [inFlight]);
    await stack.db.query(`UPDATE idempotency_keys SET action_id = $2, response_body = jsonb_set(response_body, '{action_id}', to_jsonb($2::int))
                           WHERE account_id = $1 AND key = $3`, [accountId, inFlight, headers['Idempotency-Key']]);
    await terminate(actionWorkflowId(first.body.action_id));
    const repeat = call('POST', `${V1}/generate/photo`, photo(), headers);
    await eventually(async () => (await stack.db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%LEFT JOIN actions a ON a.id = k.action_id%' AND pid <> pg_backend_pid()`))[0].n,
    (n) => n > 0);
    await stack.db.transaction((m) => abandonStart(m, inFlight)); // what the 503's compensation does
    const answer = await repeat;
    assert.equal(answer.status, 200);
    assert.ok(![first.body.action_id, inFlight].includes(answer.body.action_id), 'not the stored answer of a request that did not go through');
    assert.equal(answer.headers.get('idempotent-replayed'), null);
    assert.equal((await actionRow(inFlight)).status, 'failed');
    assert.equal((await call('GET', `${V1}/balance`)).body.holds, 10, 'the first request (whose workflow was terminated) and the new one hold; the abandoned one not');
    await assertMoneyConsistent(stack.db, accountId);
    await terminate(actionWorkflowId(answer.body.action_id));
  });

  it('a repeat of an Idempotency-Key whose first request\'s workflow exists, its start not yet recorded, answers the first answer and records the start', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const headers = { 'Idempotency-Key': `started-${accountId}` };
    const first = await call('POST', `${V1}/generate/photo`, photo(), headers);
    assert.equal(first.status, 200);
    // Accepted and started, its first step not run yet (no worker has taken it): `starting` until then.
    await stack.db.query(`UPDATE actions SET start_state = 'starting' WHERE id = $1`, [first.body.action_id]);
    const repeat = await call('POST', `${V1}/generate/photo`, photo(), headers);
    assert.deepEqual([repeat.status, repeat.headers.get('idempotent-replayed'), repeat.body], [200, 'true', first.body]);
    assert.equal((await actionRow(first.body.action_id)).start_state, 'started', 'Temporal\'s answer recorded');
    assert.equal((await call('GET', `${V1}/balance`)).body.holds, 5);
    await terminate(actionWorkflowId(first.body.action_id));
  });

  it('a v2 cancel and a failing workflow step on the same action queue on their locks instead of deadlocking', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const actionId = await placeAction(stack.db, accountId, { hold: 5 });
    const [{ id: jobId }] = await stack.db.query(
      `INSERT INTO jobs (id, account_id, action_id, type, status, phase, updated_at)
       VALUES (gen_random_uuid(), $1, $2, 'generation.execute', 'running', 'provider_running', now() - interval '1 minute') RETURNING id`, [accountId, actionId]);

    // failAction's first step (hold, then action) is under way in another transaction...
    const step = stack.db.createQueryRunner();
    await step.connect();
    await step.startTransaction();
    try {
      await settleHold(step.manager, actionId, 'released');
      const cancel = apiClient(stack.baseUrl, apiKey)('POST', `${V2}/jobs/${jobId}/cancel`);
      await eventually(async () => (await stack.db.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`))[0].n, (n) => n > 0);
      // ...and takes its second lock while the cancel waits: with one lock order this cannot deadlock.
      await closeAction(step.manager, actionId, 'failed', 'The provider refused');
      await step.commitTransaction();
      const res = await cancel;
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.cancelled, false);
    } finally {
      if (step.isTransactionActive) await step.rollbackTransaction();
      await step.release();
    }
    assert.equal((await actionRow(actionId)).status, 'failed');
    await assertMoneyConsistent(stack.db, accountId);
  });
});
