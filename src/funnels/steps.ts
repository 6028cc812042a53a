/**
 * A funnel step sent to its workflow as an update, and the workflow's refusals answered as the API's errors:
 * the validators' and handlers' ApplicationFailure types are the `error` codes (`FUNNEL_REFUSALS`).
 */
import { Client, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError, type UpdateDefinition } from '@temporalio/common';
import { FUNNEL_REFUSALS } from './session';
import { log } from '../log';
import { funnelWorkflowId } from '../temporal/contract';
import { AppError, generationUnavailable } from '../errors';

/** Refusals that are a step out of order (409); anything else the workflow refused is a failure of the step (500). */
const OUT_OF_ORDER = new Set<string>([FUNNEL_REFUSALS.expired, FUNNEL_REFUSALS.generated, FUNNEL_REFUSALS.ideaLimit]);

/** How long a request waits for its step (an idea may take the provider's retries); past it 503, the step may still land. */
export const FUNNEL_STEP_DEADLINE_MS = 120_000;

export async function askFunnel<Ret, Args extends unknown[]>(
  temporal: Client, funnelId: number, update: UpdateDefinition<Ret, Args>, args: Args, deadlineMs = FUNNEL_STEP_DEADLINE_MS,
): Promise<Ret> {
  try {
    const handle = temporal.workflow.getHandle(funnelWorkflowId(funnelId));
    const execute = handle.executeUpdate as (def: UpdateDefinition<Ret, Args>, options: { args: Args }) => Promise<Ret>;
    // Without a live worker an update waits to be accepted: bounded, so the request ends (503).
    return await temporal.withDeadline(Date.now() + deadlineMs, () => execute.call(handle, update, { args }));
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const type = err.cause.type ?? '';
      if (OUT_OF_ORDER.has(type)) throw new AppError(409, type, err.cause.message);
      if (type === FUNNEL_REFUSALS.busy) throw generationUnavailable(err.cause.message);
      throw new AppError(500, type === FUNNEL_REFUSALS.ideaFailed ? type : 'funnel_step_failed', err.cause.message);
    }
    // The session's workflow has closed (it ended idle a moment ago).
    if (err instanceof WorkflowNotFoundError) throw new AppError(409, FUNNEL_REFUSALS.expired, 'The session has ended; it only answers GET');
    log.error('could not reach the funnel workflow', { funnelId, error: String(err) });
    throw generationUnavailable('The session could not be reached; try again shortly');
  }
}
