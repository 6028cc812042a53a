/**
 * Retention on a Temporal schedule: the schedule the worker processes ensure, and one run of the housekeeping
 * workflow it starts, against real Postgres and the dev server.
 */
import assert from 'node:assert/strict';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { RETENTION } from '../../src/housekeeping/retention';
import { ensureHousekeepingSchedule } from '../../src/housekeeping/schedule';
import type { HousekeepingReport } from '../../src/temporal/contract';
import { eventually, newAccount, placeAction } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('housekeeping on a Temporal schedule', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.stop());

  it('is one schedule however many processes ensure it: every 10 minutes, skipping a run while one is going', async () => {
    const ids = await Promise.all([1, 2, 3].map(() => ensureHousekeepingSchedule(stack.temporal, stack.taskQueue)));
    assert.deepEqual(new Set(ids).size, 1);
    const handle = stack.temporal.schedule.getHandle(ids[0]);
    try {
      const schedule = await handle.describe();
      assert.equal(schedule.action.type, 'startWorkflow');
      assert.equal((schedule.action as { workflowType: string }).workflowType, 'housekeepingWorkflow');
      assert.equal((schedule.action as { taskQueue: string }).taskQueue, stack.taskQueue);
      assert.deepEqual(schedule.spec.intervals?.map((i) => i.every), [10 * 60_000]);
      assert.equal(schedule.policies.overlap, ScheduleOverlapPolicy.SKIP);
    } finally {
      await handle.delete();
    }
  });

  it('updates a schedule an older release made with another interval and overlap policy, keeping it paused', async () => {
    const taskQueue = `${stack.taskQueue}-older-release`; // a schedule of its own, apart from the one the test before deleted
    const scheduleId = `${taskQueue}-housekeeping`;
    const handle = await stack.temporal.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1 hour' }] },
      action: { type: 'startWorkflow', workflowType: 'housekeepingWorkflow', workflowId: scheduleId, taskQueue, args: [] },
      policies: { overlap: ScheduleOverlapPolicy.ALLOW_ALL },
      state: { paused: true, note: 'paused by an operator' },
    });
    try {
      assert.equal(await ensureHousekeepingSchedule(stack.temporal, taskQueue), scheduleId);
      const schedule = await handle.describe();
      assert.deepEqual(schedule.spec.intervals?.map((i) => i.every), [10 * 60_000]);
      assert.equal(schedule.policies.overlap, ScheduleOverlapPolicy.SKIP);
      assert.deepEqual([schedule.state.paused, schedule.state.note], [true, 'paused by an operator']);
    } finally {
      await handle.delete();
    }
  });

  it('a run drops what is past its retention and keeps the rest', async () => {
    const { accountId } = await newAccount(stack.db, 10);
    const actionId = await placeAction(stack.db, accountId);
    const db = stack.db;
    const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);
    // Idempotency-Key answers: one past its retention, one within it.
    for (const [key, at] of [['old', ago(RETENTION.idempotencyKeySeconds + 60)], ['fresh', ago(10)]] as const) {
      await db.query(`INSERT INTO idempotency_keys (account_id, scope, key, request_hash, response_status, response_body, created_at) VALUES ($1, 'test', $2, 'h', 200, '{}', $3)`, [accountId, `hk-${key}`, at]);
    }
    // Rate-limit windows of a key: long gone, three before, the two before (kept: API hosts' clocks may differ from
    // the database's), the current one.
    const [{ id: keyId }] = await db.query('SELECT id FROM api_keys WHERE account_id = $1', [accountId]);
    const window = Math.floor(Date.now() / 60_000);
    for (const w of [window - 100, window - 3, window - 2, window - 1, window]) await db.query('INSERT INTO rate_limit_windows (key_id, window_start, count) VALUES ($1, $2, 1)', [keyId, w]);
    // Deliveries: finished long ago, finished lately, pending long ago (a delivery still owed is never dropped).
    const delivery = async (event: string, status: string, daysAgo: number) =>
      (await db.query(
        `INSERT INTO webhook_deliveries (account_id, action_id, event, url, max_attempts, status, created_at)
         VALUES ($1, $2, $3, 'https://example.com/hook', 3, $4, $5) RETURNING id`,
        [accountId, actionId, event, status, ago(daysAgo * 86_400)]))[0].id as string;
    const oldFinished = await delivery('generation.completed', 'succeeded', RETENTION.finishedDeliveryDays + 1);
    const lateFinished = await delivery('generation.failed', 'failed', RETENTION.finishedDeliveryDays - 1);
    const oldPending = await delivery('edit.completed', 'pending', RETENTION.finishedDeliveryDays + 5);

    const scheduleId = await ensureHousekeepingSchedule(stack.temporal, stack.taskQueue);
    const schedule = stack.temporal.schedule.getHandle(scheduleId);
    let report: HousekeepingReport;
    try {
      await schedule.trigger();
      const started = await eventually(async () => (await schedule.describe()).info.recentActions, (actions) => actions.length > 0);
      report = await stack.temporal.workflow.getHandle(started[0].action.workflow.workflowId).result();
    } finally {
      await schedule.delete();
    }

    const keys = await db.query(`SELECT key FROM idempotency_keys WHERE account_id = $1 ORDER BY key`, [accountId]);
    assert.deepEqual(keys.map((k: { key: string }) => k.key), ['hk-fresh']);
    // Kept: the windows from two before the run's own minute on. A minute may have begun between the inserts and the
    // run (the run reads the database's clock): then the run's minute is the next one.
    const runWindow = Math.floor(Date.now() / 60_000);
    const windows = (await db.query('SELECT window_start FROM rate_limit_windows WHERE key_id = $1 ORDER BY window_start', [keyId]))
      .map((w: { window_start: string }) => Number(w.window_start));
    const keptFrom = (minute: number) => [window - 100, window - 3, window - 2, window - 1, window].filter((w) => w >= minute - 2);
    assert.ok([window, runWindow].some((minute) => JSON.stringify(windows) === JSON.stringify(keptFrom(minute))), `${windows} (inserted in minute ${window}, checked in ${runWindow})`);
    const deliveries = await db.query('SELECT id FROM webhook_deliveries WHERE action_id = $1', [actionId]);
    assert.deepEqual(new Set(deliveries.map((d: { id: string }) => d.id)), new Set([lateFinished, oldPending]));
    assert.ok(!deliveries.some((d: { id: string }) => d.id === oldFinished));
    assert.ok(report.idempotencyKeys >= 1 && report.rateLimitWindows >= 1 && report.deliveries >= 1, JSON.stringify(report));
  });
});
