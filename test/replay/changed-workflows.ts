/**
 * actionWorkflow as someone might carelessly change it: the charge now happens before the provider call. Used
 * only by the replay suite to prove that such a change is caught.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';

const { startProcessing, completeAction, generateAsset } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute' });

export async function actionWorkflow({ actionId }: { actionId: number }): Promise<unknown> {
  await startProcessing(actionId);
  await completeAction(actionId, `results/${actionId}.jpg`);
  return generateAsset(actionId);
}
