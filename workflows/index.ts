/** The worker's only workflowsPath: every workflow type, one per file. */
export { actionWorkflow } from './action';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { jobWorkflow } from './job';
export { announcementWorkflow } from './announcement';
export { funnelWorkflow } from './funnel';
export { housekeepingWorkflow } from './housekeeping';
