/**
 * Records workflow histories for the replay suite: `npm run record:histories`. Each scenario runs for real on a
 * fresh dev server and Postgres (the test environment) and writes `test/histories/<workflow>.<scenario>.v<N>.json`.
 * Bump the version (HISTORY_VERSION=v2) when recording after a workflow change and keep the old files: they prove
 * that histories of workflows started before the change still replay.
 */
import { writeFile } from 'node:fs/promises';
import type { WorkflowHandle } from '@temporalio/client';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { setLogLevel } from '../../src/log';
import { createBatch } from '../../src/batches/store';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { ProviderError } from '../../src/providers/provider';
import {
  actionWorkflowId, announcementWorkflowId, batchPriority, batchWorkflowId, deliveryWorkflowId, funnelWorkflowId, jobWorkflowId,
} from '../../src/temporal/contract';
import { startHttpsServer } from '../support/https-server';
import { startActionWorkflow, startJobWorkflow } from '../../src/temporal/starts';
import { randomUUID } from 'node:crypto';
import { setUpEnvironment, tearDownEnvironment } from '../support/environment';
import { apiClient, eventually, jpegBase64, newAccount, placeAction, V1 } from '../support/fixtures';
import { ScriptedProvider } from '../support/providers';
import { providerRoute, Stack, startStack } from '../support/stack';

const OUT = path.resolve(__dirname, '../../../test/histories');
const VERSION = process.env.HISTORY_VERSION ?? 'v2';

type Product = 'photo' | 'card' | 'video' | 'edit';

async function save(handle: { fetchHistory(): ReturnType<WorkflowHandle['fetchHistory']> }, name: string): Promise<void> {
  const file = path.join(OUT, `${name}.${VERSION}.json`);
  await writeFile(file, historyToJSON(await handle.fetchHistory()));
  process.stdout.write(`recorded ${path.relative(process.cwd(), file)}\n`);
}

async function record(
  stack: Stack, name: string, product: Product, params: Record<string, unknown>,
  during?: (actionId: number) => Promise<void>, webhookUrl?: string,
): Promise<number> {
  const { accountId } = await newAccount(stack.db, 50);
  const actionId = await placeAction(stack.db, accountId, { product, params, hold: 5 });
  if (webhookUrl) await stack.db.query('UPDATE actions SET webhook_url = $2 WHERE id = $1', [actionId, webhookUrl]);
  await startActionWorkflow(stack.temporal, stack.taskQueue, {
    id: actionId, accountId, type: product === 'photo' || product === 'card' ? 'generate' : product, product, provider: providerRoute(stack, product),
  });
  const handle = stack.temporal.workflow.getHandle(actionWorkflowId(actionId));
  if (during) await during(actionId);
  await handle.result();
  await save(handle, `action-workflow.${name}`);
  return actionId;
}

/** The failure event of an action the reconciler closed: an announcement workflow with one delivery child. */
async function recordAnnouncement(stack: Stack): Promise<void> {
  const receiver = await startHttpsServer((_req, res) => void res.writeHead(204).end());
  const { accountId } = await newAccount(stack.db, 50);
  const actionId = await placeAction(stack.db, accountId, { hold: 5 });
  await stack.db.query(`UPDATE actions SET status = 'failed', webhook_url = $2 WHERE id = $1`, [actionId, `${receiver.url}/hook`]);
  const handle = await stack.temporal.workflow.start('announcementWorkflow', {
    taskQueue: stack.taskQueue, workflowId: announcementWorkflowId(actionId, 'failed'), args: [{ actionId, outcome: 'failed' }],
  });
  await handle.result();
  await save(handle, 'announcement-workflow.failure-event');
  await receiver.close();
}

/** Workflows started with a provider route (v3): the provider's calls on its own task queue; a video advanced on timers. */
async function recordRouted(stack: Stack, input: string): Promise<void> {
  for (const [name, product, params] of [
    ['photo-completed', 'photo', { inputs: [input], resolution: '1K' }],
    ['video-completed', 'video', { input, scenario: '', durationSec: 5, loopMode: false, cardMode: false, aspectRatio: '3:4' }],
  ] as const) {
    const { accountId } = await newAccount(stack.db, 50);
    const actionId = await placeAction(stack.db, accountId, { product, params, hold: 5 });
    await startActionWorkflow(stack.temporal, stack.taskQueue, { id: actionId, accountId, type: product === 'photo' ? 'generate' : product, product, provider: providerRoute(stack, product) });
    const handle = stack.temporal.workflow.getHandle(actionWorkflowId(actionId));
    await handle.result();
    await save(handle, `action-workflow.${name}`);
  }
  await recordJob(stack, 'succeeded', input);
}

/** A housekeeping run (v5; v9 after `sandbox-top-up`), as its schedule starts it, on the stack's worker. */
async function recordHousekeeping(stack: Stack): Promise<void> {
  const handle = await stack.temporal.workflow.start('housekeepingWorkflow', {
    taskQueue: stack.taskQueue, workflowId: `housekeeping-record-${Date.now()}`, args: [],
  });
  await handle.result();
  await save(handle, 'housekeeping-workflow.purged');
}

/**
 * A catalogue batch (v10; v11 after `accept-starts-items`): three photos under a ceiling of two, with an ad-hoc
 * webhook_url, continuing as new after each item (the first run's history holds an accept, its job (a child in v10)
 * and the continue-as-new; the last run's the budget stop, the end and its batch.failed delivery).
 */
async function recordBatch(stack: Stack, input: string): Promise<void> {
  const { accountId, keyId } = await newAccount(stack.db, 100);
  const receiver = await startHttpsServer((_req, res) => void res.writeHead(200).end());
  const batchId = randomUUID();
  const request = { images: [{ stored: { key: input, format: 'jpeg', width: 400, height: 500 } }], product_name: 'Vase', category_id: 'home', resolution: '1K', photo_style: 'classic', aspect_ratio: '3:4' };
  await createBatch(stack.db, {
    id: batchId, accountId, keyId, maxSparks: 10, webhookUrl: `${receiver.url}/batch`, itemEvents: false, clientGroupId: null, acceptLanguage: null, sandboxScenario: null,
    items: [1, 2, 3].map((position) => ({ position, external_id: `sku-${position}`, type: 'photo' as const, request, price: 5, status: 'pending' as const })),
  }, undefined, { status: 202, body: {} });
  const first = await stack.temporal.workflow.start('batchWorkflow', {
    taskQueue: stack.taskQueue, workflowId: batchWorkflowId(batchId), args: [{ batchId, itemsPerRun: 1 }], priority: batchPriority(accountId),
  });
  await stack.temporal.workflow.getHandle(batchWorkflowId(batchId)).result();
  await save(stack.temporal.workflow.getHandle(batchWorkflowId(batchId), first.firstExecutionRunId), 'batch-workflow.continued-as-new');
  await save(stack.temporal.workflow.getHandle(batchWorkflowId(batchId)), 'batch-workflow.budget-exhausted');
  await receiver.close();
}

/**
 * A funnel session (v3) over the API: start, two ideas, a setup, generate (the card's action is a workflow of its
 * own), then the session ends idle (a 2 s idle timeout, its own stack).
 */
async function recordFunnel(): Promise<void> {
  const stack = await startStack({ funnelIdleTimeoutSeconds: 2 });
  const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
  const { body: funnel } = await call('POST', `${V1}/funnels`, { images: [{ data: await jpegBase64() }], locale: 'en' });
  const path = `${V1}/funnels/${funnel.funnel_id}`;
  await call('POST', `${path}/idea`);
  await call('POST', `${path}/idea`);
  await call('POST', `${path}/setup`, { aspect_ratio: '1:1', style: 'infographic' });
  const { body: card } = await call('POST', `${path}/generate`, { idea_id: 'idea_1' });
  await stack.temporal.workflow.getHandle(actionWorkflowId(card.action_id)).result();
  const handle = stack.temporal.workflow.getHandle(funnelWorkflowId(funnel.funnel_id));
  await handle.result();
  await save(handle, 'funnel-workflow.generated-then-expired');
  await stack.stop();
}

/**
 * A v2 job through the stack's worker: its action and job rows as the API writes them, then its workflow
 * (`during` acts on it while it runs).
 */
async function recordJob(
  stack: Stack, name: string, input: string, options: { webhookUrl?: string; during?: (jobId: string) => Promise<void> } = {},
): Promise<void> {
  const { accountId } = await newAccount(stack.db, 50);
  const actionId = await placeAction(stack.db, accountId, { params: { inputs: [input], resolution: '1K' }, hold: 5 });
  if (options.webhookUrl) await stack.db.query('UPDATE actions SET webhook_url = $2 WHERE id = $1', [actionId, options.webhookUrl]);
  const jobId = randomUUID();
  await stack.db.query(`INSERT INTO jobs (id, account_id, action_id, type, status, phase) VALUES ($1, $2, $3, 'generation.execute', 'queued', 'queued')`, [jobId, accountId, actionId]);
  await startJobWorkflow(stack.temporal, { taskQueue: stack.taskQueue, jobMaxAttempts: 3, jobRetryBackoffMs: 200 }, {
    jobId, type: 'generation.execute', actionId, accountId, provider: providerRoute(stack, 'photo'),
  });
  const handle = stack.temporal.workflow.getHandle(jobWorkflowId(jobId));
  if (options.during) await options.during(jobId);
  await handle.result();
  await save(handle, `job-workflow.${name}`);
}

/**
 * v4 (the `fused-steps` patch): the endings of a routed job that earlier versions did not record: spent
 * attempts (dead_letter), a refusal, a cancel while the provider renders, and a success announced to a webhook.
 */
async function recordJobEndings(input: string): Promise<void> {
  const unavailable = () => new ProviderError('upstream 503', 'unavailable', true);
  const spent = await startStack({ provider: new ScriptedProvider([unavailable(), unavailable(), unavailable()]), jobRetryBackoffMs: 200 });
  await recordJob(spent, 'dead-lettered', input);
  await spent.stop();

  const refusing = await startStack({ provider: new ScriptedProvider([new ProviderError('content policy', 'content_policy', false)]) });
  await recordJob(refusing, 'refused', input);
  await refusing.stop();

  const receiver = await startHttpsServer((_req, res) => void res.writeHead(204).end());
  const notifying = await startStack();
  await recordJob(notifying, 'succeeded-with-webhook', input, { webhookUrl: `${receiver.url}/hook` });
  await notifying.stop();
  await receiver.close();

  const slow = await startStack({ provider: new LocalRenderer({ delayMs: 30_000 }) });
  await recordJob(slow, 'cancelled-while-rendering', input, {
    during: async (jobId) => {
      const handle = slow.temporal.workflow.getHandle(jobWorkflowId(jobId));
      await eventually(async () => (await slow.db.query('SELECT phase FROM jobs WHERE id = $1', [jobId]))[0].phase, (phase) => phase === 'provider_running');
      await handle.cancel();
    },
  });
  await slow.stop();
}

/**
 * v8 (`inline-render`): two photos at once on a local renderer with one place: one renders in its workflow task, the
 * other is refused at once (`RendererBusy`, a failed local activity) and renders on the provider's queue. The second
 * is recorded.
 */
async function recordRendererBusy(input: string): Promise<void> {
  const narrow = await startStack({ provider: new LocalRenderer({ delayMs: 1500, maxConcurrent: 1 }) });
  const { accountId } = await newAccount(narrow.db, 50);
  const route = providerRoute(narrow, 'photo');
  const ids = await Promise.all([1, 2].map(() => placeAction(narrow.db, accountId, { params: { inputs: [input], resolution: '1K' }, hold: 5 })));
  await Promise.all(ids.map((id) => startActionWorkflow(narrow.temporal, narrow.taskQueue, { id, accountId, type: 'generate', product: 'photo', provider: route })));
  for (const id of ids) {
    const handle = narrow.temporal.workflow.getHandle(actionWorkflowId(id));
    await handle.result();
    if ((await handle.fetchHistory()).events!.some((e) => e.markerRecordedEventAttributes?.failure)) await save(handle, 'action-workflow.photo-renderer-busy');
  }
  await narrow.stop();
}

async function main(): Promise<void> {
  setLogLevel('error');
  await setUpEnvironment();
  try {
    const stack = await startStack();
    // HISTORY_ONLY records just one later addition: `announcement` (v2), `routing` (v3: provider task queues),
    // `funnel` (v3: funnel sessions), `housekeeping` (v5: the retention workflow; v9 after `sandbox-top-up`), `fused` (v4: the action and job
    // workflows after the `fused-steps` patch, i.e. every scenario except the announcement and funnel ones, whose
    // workflows did not change, plus the job endings; v5 again after `settled-render`), `actions` (the action
    // workflow's scenarios only: v6 after `visible-steps`, v7 after `outcome-plans`), `inline` (v8, after
    // `inline-render`: as `fused`, plus a job rendered in-process by the local renderer and a photo the renderer had
    // no room for; `busy` records that photo alone), `batch` (v10: the batch workflow), `lean` (v11: the job workflow
    // after `lean-job`, every job scenario, and the batch workflow after `accept-starts-items`).
    const only = process.env.HISTORY_ONLY;
    if (only === 'lean') {
      const input = `inputs/record-${Date.now()}.jpg`;
      await stack.store.put(input, Buffer.from(await jpegBase64(), 'base64'));
      await recordJobEndings(input);
      await recordJob(stack, 'succeeded-in-process', input);
      for (const [name, failures] of [['succeeded', []], ['retried-then-succeeded', [new ProviderError('upstream 503', 'unavailable', true)]]] as const) {
        const jobs = await startStack({ provider: new ScriptedProvider([...failures]), jobRetryBackoffMs: 200 });
        await recordJob(jobs, name, input);
        await jobs.stop();
      }
      await recordBatch(stack, input);
      await stack.stop();
      return;
    }
    if (only && only !== 'fused' && only !== 'actions' && only !== 'inline') {
      const input = `inputs/record-${Date.now()}.jpg`;
      await stack.store.put(input, Buffer.from(await jpegBase64(), 'base64'));
      if (only === 'announcement') await recordAnnouncement(stack);
      if (only === 'routing') await recordRouted(stack, input);
      if (only === 'funnel') await recordFunnel();
      if (only === 'housekeeping') await recordHousekeeping(stack);
      if (only === 'busy') await recordRendererBusy(input);
      if (only === 'batch') await recordBatch(stack, input);
      await stack.stop();
      return;
    }
    const input = `inputs/record-${Date.now()}.jpg`;
    await stack.store.put(input, Buffer.from(await jpegBase64(), 'base64'));
    const garbage = `inputs/record-garbage-${Date.now()}.jpg`;
    await stack.store.put(garbage, Buffer.from('not an image'));
    const photo = { inputs: [input], resolution: '1K' };
    if (!only) await recordAnnouncement(stack);
    if (!only) await recordFunnel();
    if (!only) await recordHousekeeping(stack);
    if (only !== 'actions') await recordJobEndings(input);

    if (only === 'inline') {
      await recordJob(stack, 'succeeded-in-process', input);
      await recordRendererBusy(input);
    }
    const photoId = await record(stack, 'photo-completed', 'photo', photo);
    await record(stack, 'photo-refused', 'photo', { inputs: [garbage] });
    await record(stack, 'card-completed', 'card', {
      inputs: [input], style: 'infographic', userText: 'One\nTwo', creativity: 0.5, conceptId: 'infographic',
    });
    await record(stack, 'video-completed', 'video', { input, scenario: '', durationSec: 5, loopMode: false, cardMode: false, aspectRatio: '3:4' });
    const [{ asset_path: photoResult }] = await stack.db.query('SELECT asset_path FROM actions WHERE id = $1', [photoId]);
    await record(stack, 'edit-completed', 'edit', { source: photoResult, instruction: 'brighter' });

    // An ad-hoc webhook whose receiver fails once, then accepts: the action starts a delivery child workflow.
    let answered = 0;
    const receiver = await startHttpsServer((_req, res) => void res.writeHead(answered++ === 0 ? 503 : 200).end());
    const notified = await record(stack, 'photo-with-webhook', 'photo', photo, undefined, `${receiver.url}/hook`);
    const [delivery] = await stack.db.query('SELECT id FROM webhook_deliveries WHERE action_id = $1', [notified]);
    const deliveryHandle = stack.temporal.workflow.getHandle(deliveryWorkflowId(delivery.id));
    await deliveryHandle.result();
    if (only !== 'actions') await save(deliveryHandle, 'webhook-delivery-workflow.retried-then-delivered');
    await receiver.close();
    await stack.stop();

    const flaky = await startStack({ provider: new ScriptedProvider([new ProviderError('upstream timeout', 'timeout', true)]) });
    await record(flaky, 'photo-retried', 'photo', photo);
    await flaky.stop();

    // v2 jobs: one that succeeds at once, one whose first attempt fails and is retried after a durable backoff.
    for (const [name, failures] of only === 'actions' ? [] : [['succeeded', []], ['retried-then-succeeded', [new ProviderError('upstream 503', 'unavailable', true)]]] as const) {
      const jobs = await startStack({ provider: new ScriptedProvider([...failures]), jobRetryBackoffMs: 200 });
      await recordJob(jobs, name, input);
      await jobs.stop();
    }

    const slow = await startStack({ provider: new LocalRenderer({ delayMs: 30_000 }) });
    await record(slow, 'photo-cancelled', 'photo', photo, async (actionId) => {
      const handle = slow.temporal.workflow.getHandle(actionWorkflowId(actionId));
      // Processing: the render (30 s) follows its start at once, as an activity or, in-process, a local activity.
      await eventually(async () => (await slow.db.query('SELECT status FROM actions WHERE id = $1', [actionId]))[0].status, (status) => status === 'processing');
      await handle.cancel();
    });
    await slow.stop();
  } finally {
    await tearDownEnvironment();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
