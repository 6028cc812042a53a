import { Client, WorkflowExecutionDescription, WorkflowNotFoundError } from '@temporalio/client';

/** Where a workflow stands for the reconciler and the cancels: running, closed (and how), or unknown to Temporal. */
export type WorkflowState =
  | { kind: 'running'; description: WorkflowExecutionDescription }
  | { kind: 'closed'; status: string }
  | { kind: 'missing' };

export async function workflowState(client: Client, workflowId: string): Promise<WorkflowState> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return description.status.name === 'RUNNING' ? { kind: 'running', description } : { kind: 'closed', status: description.status.name };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { kind: 'missing' };
    throw err;
  }
}

/** What an integrator reads when an action ends because its workflow stopped without finishing it. */
export function lostWorkflowMessage(state: Exclude<WorkflowState, { kind: 'running' }>): string {
  if (state.kind === 'missing') return 'Processing was lost: its workflow no longer exists';
  if (state.status === 'TERMINATED') return 'Processing was stopped by an operator';
  return `Processing ended without a result (workflow ${state.status.toLowerCase().replace(/_/g, ' ')})`;
}
