/** The worker's only workflowsPath: every workflow type, one per file. */
export { actionWorkflow } from './action';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { jobWorkflow } from './job';
export { announcementWorkflow } from './announcement';
export { funnelWorkflow } from './funnel';
export { housekeepingWorkflow } from './housekeeping';
export { batchWorkflow } from './batch';

import type { WorkflowContract } from '../src/temporal/contract';
import type * as implemented from '.';

/** Fails to compile when a workflow of the contract is missing here or its signature differs from the contract's. */
type Implementing<T extends WorkflowContract> = T;
export type Implemented = Implementing<typeof implemented>;
