/**
 * Workflow interceptors (bundled with the workflows when tracing is on, see TRACING_WORKFLOW_MODULES): a workflow's
 * log lines carry the API's request id of the action, read from the trace's baggage that Temporal's OpenTelemetry
 * interceptors restored from the workflow's headers. Deterministic: it reads the workflow's context, adds no command.
 */
import { context, propagation } from '@opentelemetry/api';
import type { WorkflowInterceptors } from '@temporalio/workflow';

/** REQUEST_ID_KEY of src/telemetry/spans.ts (not imported: workflow code imports no module of the service's side). */
const REQUEST_ID_KEY = 'request.id';

export const interceptors = (): WorkflowInterceptors => ({
  outbound: [{
    getLogAttributes(input, next) {
      const requestId = propagation.getBaggage(context.active())?.getEntry(REQUEST_ID_KEY)?.value;
      return next(requestId ? { ...input, requestId } : input);
    },
  }],
});
