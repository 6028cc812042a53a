/** The floors' workflow types: nothing at all, and one activity. Only @temporalio/workflow (a workflow bundle). */
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './floor-activities';

const { echo } = proxyActivities<typeof activities>({ startToCloseTimeout: '30 seconds' });

export async function benchNoopWorkflow(): Promise<void> {
  // nothing: the cost of a start alone
}

export async function benchOneActivityWorkflow(n: number): Promise<number> {
  return echo(n);
}
