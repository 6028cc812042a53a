import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { type AcceptCursor, acceptNextItems, finishBatch, startBatch } from '../src/batches/run';

/** A batch's steps (src/batches/run.ts): start it, accept its next items, end it. */
export function createBatchActivities(deps: ActivityDeps) {
  return {
    startBatch: (batchId: string) => startBatch(deps, batchId),
    acceptNextItems: (batchId: string, cursor: AcceptCursor) =>
      acceptNextItems(deps, batchId, cursor, { progress: () => Context.current().heartbeat(), attempt: Context.current().info.attempt }),
    finishBatch: (batchId: string, stop: 'budget' | 'cancelled' | undefined) => finishBatch(deps, batchId, stop),
  };
}
