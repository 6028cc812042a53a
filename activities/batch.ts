import { Context } from '@temporalio/activity';
import type { ItemInFlight } from '../src/temporal/contract';
import type { ActivityDeps } from './deps';
import {
  type AcceptCursor, acceptNextItems, awaitBatchItems, finishBatch, startBatch, type StepContext, type StepCursor, takeBatchStep,
} from '../src/batches/run';

/** The step's context: the activity's heartbeat, its attempt, and its sleep (which ends when the activity is cancelled). */
function stepContext(): StepContext {
  const ctx = Context.current();
  return { progress: () => ctx.heartbeat(), attempt: ctx.info.attempt, sleep: (ms) => ctx.sleep(ms) };
}

/** A batch's steps (src/batches/run.ts): start it, take its next steps (its items' jobs started by the worker's client), end it. */
export function createBatchActivities(deps: ActivityDeps) {
  return {
    startBatch: (batchId: string) => startBatch(deps, batchId),
    /** The step of batches that start their items as children (runs before `accept-starts-items`). */
    acceptNextItems: (batchId: string, cursor: AcceptCursor) => acceptNextItems(deps, batchId, cursor, stepContext()),
    takeBatchStep: (batchId: string, cursor: StepCursor) => takeBatchStep({ ...deps, temporal: Context.current().client }, batchId, cursor, stepContext()),
    awaitBatchItems: (batchId: string, inFlight: ItemInFlight[]) => awaitBatchItems(deps, batchId, inFlight, stepContext()),
    finishBatch: (batchId: string, stop: 'budget' | 'cancelled' | undefined) => finishBatch(deps, batchId, stop),
  };
}
