/**
 * Every recorded history under test/histories replays against today's workflow code. A workflow change that
 * breaks determinism fails here; guard such changes with patched() and record a new history version.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { quietLogger, testEnvironment } from '../support/environment';

const HISTORIES = path.resolve(__dirname, '../../../test/histories');

function loadHistories() {
  return readdirSync(HISTORIES)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ file, workflowId: file.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8'))) }));
}

describe('replay of recorded histories', function () {
  this.timeout(60_000);
  const histories = loadHistories();

  it('has at least one history of every workflow type', () => {
    const types = new Set(histories.map((h) => h.history.events![0].workflowExecutionStartedEventAttributes!.workflowType!.name));
    assert.deepEqual([...types].sort(), ['actionWorkflow', 'announcementWorkflow', 'batchWorkflow', 'funnelWorkflow', 'housekeepingWorkflow', 'jobWorkflow', 'webhookDeliveryWorkflow']);
  });

  it('replays every history without a determinism violation', async () => {
    const results = Worker.runReplayHistories({ workflowBundle: testEnvironment().workflowBundle }, histories);
    let count = 0;
    for await (const result of results) {
      assert.equal(result.error, undefined, `${result.workflowId}: ${result.error}`);
      count++;
    }
    assert.equal(count, histories.length);
  });

  it('detects a workflow change that is not guarded by patched()', async () => {
    const changed = await bundleWorkflowCode({ workflowsPath: require.resolve('./changed-workflows'), logger: quietLogger });
    const completed = histories.find((h) => h.file.includes('photo-completed.v1'))!;
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: changed }, completed.history, completed.workflowId),
      DeterminismViolationError,
    );
  });
});
