import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ProviderError } from '../../src/providers/provider';
import { readBalance } from '../../src/billing/sparks';
import { actionWorkflowId, SEARCH_ATTRIBUTES } from '../../src/temporal/contract';
import { startActionWorkflow } from '../../src/temporal/starts';
import type { ActionOutcome } from '../../src/temporal/contract';
import { assertMoneyConsistent, jpegBase64, newAccount, placeAction } from '../support/fixtures';
import { ScriptedProvider } from '../support/providers';
import { stepsOf } from '../support/history';
import { providerRoute, Stack, startStack } from '../support/stack';

/** Runs a photo action as the API starts one: routed to its provider's task queue. */
async function runAction(stack: Stack, accountId: number, actionId: number): Promise<ActionOutcome> {
  await startActionWorkflow(stack.temporal, stack.taskQueue, { id: actionId, accountId, type: 'generate', product: 'photo', provider: providerRoute(stack, 'photo') });
  return stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
}

/** The attempt that ran an activity (or a local activity: an in-process render) of the action's workflow. */
async function activityAttempts(stack: Stack, actionId: number, activityType: string): Promise<number> {
  const history = await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).fetchHistory();
  return stepsOf(history.events!).find((step) => step.type === activityType)!.attempt;
}

/**
 * The steps of an action's history as an operator reads them in the Web UI: activities by type (with their task
 * queue) and local activities by the type their markers record, in order.
 */
async function storyOf(stack: Stack, actionId: number): Promise<string[]> {
  const history = await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).fetchHistory();
  return stepsOf(history.events!).map((step) => `${step.type}@${step.queue}`);
}

describe('actionWorkflow (dev server)', function () {
  this.timeout(60_000);

  describe('with the local renderer', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack();
    });
    after(() => stack.stop());

    async function storedInput(bytes?: Buffer): Promise<string> {
      const key = `inputs/wf-${Date.now()}-${Math.random().toString(36).slice(2)}.jpg`;
      await stack.store.put(key, bytes ?? Buffer.from(await jpegBase64(), 'base64'));
      return key;
    }

    it('renders, charges the hold and completes, with the story in search attributes', async () => {
      const { accountId } = await newAccount(stack.db, 20);
      const actionId = await placeAction(stack.db, accountId, { inputs: [await storedInput()], hold: 5 });
      const outcome = await runAction(stack, accountId, actionId);
      assert.equal(outcome.status, 'completed');
      const { assetPath } = outcome as { assetPath: string };
      assert.match(assetPath, new RegExp(`^results/${actionId}/[0-9a-f]{32}\\.jpg$`));

      const [row] = await stack.db.query('SELECT status, asset_path FROM actions WHERE id = $1', [actionId]);
      assert.deepEqual([row.status, row.asset_path], ['completed', assetPath]);
      assert.deepEqual(await readBalance(stack.db, accountId), { balance: 15, holds: 0, available: 15 });
      await assertMoneyConsistent(stack.db, accountId);

      const description = await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).describe();
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.actionStatus), 'completed');
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.accountId), accountId);
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.actionType), 'generate');
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.actionId), undefined, 'the id is in the workflow id: no index write for it');
    });

    it('tells its story step by step: start, the in-process render, finalisation with its deliveries planned, in one workflow task', async () => {
      const { accountId } = await newAccount(stack.db, 20);
      const key = `inputs/wf-story-${Date.now()}.jpg`;
      await stack.store.put(key, Buffer.from(await jpegBase64(), 'base64'));
      const actionId = await placeAction(stack.db, accountId, { inputs: [key], hold: 5 });
      assert.equal((await runAction(stack, accountId, actionId)).status, 'completed');
      assert.deepEqual(await storyOf(stack, actionId), [
        'startProcessing@local', 'generateAsset@local', 'completeAndPlanDeliveries@local',
      ]);
      const history = await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).fetchHistory();
      assert.equal(history.events!.filter((e) => e.workflowTaskCompletedEventAttributes).length, 1, 'start, render and finalisation in one workflow task');

      const refused = await placeAction(stack.db, accountId, { inputs: [await storedInput(Buffer.from('garbage'))], hold: 5 });
      assert.equal((await runAction(stack, accountId, refused)).status, 'failed');
      assert.deepEqual(await storyOf(stack, refused), [
        'startProcessing@local', 'generateAsset@local', 'failAndPlanDeliveries@local',
      ]);
    });

    it('runs again after its action completed (a workflow task lost after the charge, a reset): completed, nothing rendered, charged or sent twice', async () => {
      const { accountId } = await newAccount(stack.db, 20);
      const actionId = await placeAction(stack.db, accountId, { inputs: [await storedInput()], hold: 5 });
      const first = await runAction(stack, accountId, actionId);
      assert.equal(first.status, 'completed');
      const results = () => readdir(path.join(os.tmpdir(), 'imagery-test-assets', 'results', String(actionId)));
      const stored = await results();
      // The same workflow over the same action, as a new worker runs a task whose first run was lost: its steps
      // find the action completed and charged.
      const again = await stack.temporal.workflow.execute('actionWorkflow', {
        taskQueue: stack.taskQueue, workflowId: `${actionWorkflowId(actionId)}-again`, args: [{ actionId, provider: providerRoute(stack, 'photo') }],
      });
      assert.deepEqual(again, first, 'the recorded result, not a second one');
      assert.deepEqual(await results(), stored, 'nothing rendered or stored again');
      const handle = stack.temporal.workflow.getHandle(`${actionWorkflowId(actionId)}-again`);
      assert.equal((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.actionStatus), 'completed');
      assert.deepEqual(await readBalance(stack.db, accountId), { balance: 15, holds: 0, available: 15 });
      const [{ n }] = await stack.db.query(`SELECT count(*)::int AS n FROM spark_ledger WHERE action_id = $1 AND kind = 'charge'`, [actionId]);
      assert.equal(n, 1, 'one charge');
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('a permanent provider refusal fails after one attempt and releases the hold', async () => {
      const { accountId } = await newAccount(stack.db, 20);
      const actionId = await placeAction(stack.db, accountId, { inputs: [await storedInput(Buffer.from('garbage'))], hold: 5 });
      const outcome = await runAction(stack, accountId, actionId);
      assert.equal(outcome.status, 'failed');
      assert.match((outcome as { error: string }).error, /cannot be decoded/);
      assert.equal(await activityAttempts(stack, actionId, 'generateAsset'), 1);

      const [row] = await stack.db.query('SELECT status, error_message FROM actions WHERE id = $1', [actionId]);
      assert.equal(row.status, 'failed');
      assert.match(row.error_message, /cannot be decoded/);
      assert.deepEqual(await readBalance(stack.db, accountId), { balance: 20, holds: 0, available: 20 });
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('starting the same action twice runs one workflow', async () => {
      const { accountId } = await newAccount(stack.db, 20);
      const actionId = await placeAction(stack.db, accountId, { inputs: [await storedInput()], hold: 5 });
      const input = { id: actionId, accountId, type: 'generate', product: 'photo', provider: providerRoute(stack, 'photo') } as const;
      await Promise.all([1, 2, 3].map(() => startActionWorkflow(stack.temporal, stack.taskQueue, input)));
      await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
      await startActionWorkflow(stack.temporal, stack.taskQueue, input);
      const runs = [];
      for await (const run of stack.temporal.workflow.list({ query: `WorkflowId = '${actionWorkflowId(actionId)}'` })) runs.push(run);
      assert.equal(runs.length, 1);
      assert.equal((await readBalance(stack.db, accountId)).balance, 15);
    });
  });

  describe('with a provider that has passing outages', () => {
    let stack: Stack;
    const provider = new ScriptedProvider([
      new ProviderError('upstream timeout', 'timeout', true),
      new ProviderError('upstream 503', 'unavailable', true),
    ]);
    before(async () => {
      stack = await startStack({ provider });
    });
    after(() => stack.stop());

    it('retries retryable failures with backoff and charges once on the eventual success', async () => {
      const { accountId } = await newAccount(stack.db, 20);
      const key = `inputs/wf-retry-${Date.now()}.jpg`;
      await stack.store.put(key, Buffer.from(await jpegBase64(), 'base64'));
      const actionId = await placeAction(stack.db, accountId, { inputs: [key], hold: 5 });
      const outcome = await runAction(stack, accountId, actionId);
      assert.equal(outcome.status, 'completed');
      assert.equal(provider.calls, 3);
      assert.equal(await activityAttempts(stack, actionId, 'generateAsset'), 3);
      assert.deepEqual(await readBalance(stack.db, accountId), { balance: 15, holds: 0, available: 15 });
      await assertMoneyConsistent(stack.db, accountId);
    });
  });
});
