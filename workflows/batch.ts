/**
 * The story of one catalogue batch: its items start in order as ordinary v2 jobs (`job-<uuid>`), at most the
 * batch's window in flight (its share of its account's bound). Each item's price is held when the item is accepted;
 * the batch stops accepting when the next item would pass `max_sparks` (or the account's balance), or when it was
 * cancelled, then waits for its running items and ends. Items are accepted by an activity that makes the item its
 * job's only once, so a retried step, a lost worker or a restarted server never runs an item twice; the history
 * stays bounded by continuing as new when Temporal suggests it.
 *
 *   queued ─▶ running ─▶ completed | completed_with_errors | budget_exhausted        (cancelled: by the API)
 *
 * Since the `accept-starts-items` patch the step that accepts a page of items also starts their jobs (with the
 * worker's client, on the batch queue, at the batch's priority), and the next step waits, in the activity, until
 * enough of the items in flight have ended: a step is a few events of the batch's history for a page of items,
 * where a child's start and end were three events and up to two workflow tasks per item (docs/design.md,
 * "Catalogue batches"). Runs started before the patch start their items as children (`childrenRun`), as recorded.
 *
 * The batch's workflow and its jobs run on the batch queue (`batchTaskQueue`), at a lower priority than interactive
 * work, fairly among accounts (`batchPriority`).
 */
import {
  log, condition, continueAsNew, makeContinueAsNewFunc, ParentClosePolicy, patched, proxyActivities, proxyLocalActivities, startChild, workflowInfo, WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { type AcceptedItem, type BatchInput, type BatchOutcome, batchTaskQueue, type ItemInFlight, jobWorkflowId, SEARCH_ATTRIBUTES, TIMEOUTS } from '../src/temporal/contract';
import { jobWorkflow } from './job';
import { announceBatch } from './outcome-deliveries';

const bookkeeping = proxyLocalActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });
const accepting = proxyActivities<Activities>({ ...TIMEOUTS.batchAccept, retry: TIMEOUTS.bookkeepingRetry });

export async function batchWorkflow(input: BatchInput): Promise<BatchOutcome> {
  return patched('accept-starts-items') ? stepsRun(input) : childrenRun(input);
}

/** A run since `accept-starts-items`: each step accepts and starts a page of items once there is room for it. */
async function stepsRun({ batchId, cursor, itemsPerRun }: BatchInput): Promise<BatchOutcome> {
  let { after, spent } = cursor ?? { after: 0, spent: 0 };
  let inFlight: ItemInFlight[] = cursor?.inFlight ?? [];
  // A run continued from one that started before the patch (its cursor has no items in flight: it waited for them)
  // is on the main queue, where such batches started: it moves to the batch queue before it takes a step.
  if (cursor && cursor.inFlight === undefined) {
    await makeContinueAsNewFunc<typeof batchWorkflow>({ taskQueue: batchTaskQueue(workflowInfo().taskQueue) })({ batchId, cursor: { after, spent, inFlight }, itemsPerRun });
  }
  if (!cursor && !(await bookkeeping.startBatch(batchId)).run) return end(batchId, 'cancelled');

  /** Items seen ended leave the window; a released hold gives its price back to the budget. */
  const settle = (ended: { position: number; released: boolean }[]): void => {
    for (const { position, released } of ended) {
      const item = inFlight.find((i) => i.position === position);
      if (!item) continue;
      inFlight = inFlight.filter((i) => i !== item);
      if (released) spent -= item.price;
    }
  };

  let started = 0;
  for (;;) {
    const step = await accepting.takeBatchStep(batchId, { after, spent, inFlight, ...(itemsPerRun !== undefined ? { most: itemsPerRun - started } : {}) });
    settle(step.ended);
    for (const item of step.accepted) {
      inFlight.push(item);
      spent += item.price;
      started++;
    }
    after = step.lastPosition;
    if (step.stop || step.done) {
      while (inFlight.length > 0) settle((await accepting.awaitBatchItems(batchId, inFlight)).ended);
      return end(batchId, step.stop);
    }
    if (workflowInfo().continueAsNewSuggested || (itemsPerRun !== undefined && started >= itemsPerRun)) {
      await continueAsNew<typeof batchWorkflow>({ batchId, cursor: { after, spent, inFlight }, itemsPerRun });
    }
  }
}

/** A run started before `accept-starts-items`: its items are its child workflows, followed to their ends. */
async function childrenRun({ batchId, cursor, itemsPerRun }: BatchInput): Promise<BatchOutcome> {
  let { after, spent } = cursor ?? { after: 0, spent: 0 };
  if (!cursor && !(await bookkeeping.startBatch(batchId)).run) return end(batchId, 'cancelled');

  let inFlight = 0;
  let window = 1;
  let started = 0;
  const run = (item: AcceptedItem): void => {
    inFlight++;
    started++;
    void itemEnded(item).then((released) => {
      if (released) spent -= item.price;
      inFlight--;
    });
  };

  for (;;) {
    await condition(() => inFlight < window);
    const taken = await accepting.acceptNextItems(batchId, { after, inFlight, spent, ...(itemsPerRun !== undefined ? { most: itemsPerRun - started } : {}) });
    window = taken.window;
    after = taken.lastPosition;
    for (const item of taken.accepted) {
      spent += item.price;
      run(item);
    }
    if (taken.stop || taken.done) {
      await condition(() => inFlight === 0);
      return end(batchId, taken.stop);
    }
    if (workflowInfo().continueAsNewSuggested || (itemsPerRun !== undefined && started >= itemsPerRun)) {
      await condition(() => inFlight === 0);
      await continueAsNew<typeof batchWorkflow>({ batchId, cursor: { after, spent }, itemsPerRun });
    }
  }
}

/** Ends the batch and announces its end to its webhooks. */
async function end(batchId: string, stop: 'budget' | 'cancelled' | undefined): Promise<BatchOutcome> {
  const status = await bookkeeping.finishBatch(batchId, stop);
  await announceBatch(batchId, status);
  return { status };
}

/**
 * Runs the item's job as a child and answers whether its hold was released (the job failed or was cancelled): a
 * success was charged. A child that could not be followed (already started elsewhere) is counted as charged, so
 * the budget is never passed.
 */
async function itemEnded({ job, accountId }: AcceptedItem): Promise<boolean> {
  try {
    const child = await startChild(jobWorkflow, {
      workflowId: jobWorkflowId(job.jobId),
      args: [job],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.accountId, value: accountId },
        { key: SEARCH_ATTRIBUTES.actionId, value: job.actionId },
        { key: SEARCH_ATTRIBUTES.jobId, value: job.jobId },
        { key: SEARCH_ATTRIBUTES.jobStatus, value: 'queued' },
        { key: SEARCH_ATTRIBUTES.jobPhase, value: 'queued' },
      ],
      staticSummary: `batch item · job ${job.jobId} · action ${job.actionId}`,
    });
    const outcome = await child.result();
    return outcome.status !== 'succeeded';
  } catch (err) {
    log.warn('a batch item\'s job could not be followed; its sparks stay counted', { jobId: job.jobId, error: String(err) });
    return false;
  }
}
