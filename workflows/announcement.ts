/**
 * An outcome announced outside the action's own workflow: the reconciler closes an action whose workflow was
 * terminated or lost, and this sends its failure event. One per action and outcome (its id says which).
 */
import type { AnnouncementInput } from '../src/temporal/contract';
import { announceOutcome } from './outcome-deliveries';


export async function announcementWorkflow({ actionId, outcome }: AnnouncementInput): Promise<void> {
  await announceOutcome(actionId, outcome);
}
