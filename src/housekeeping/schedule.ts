/**
 * The housekeeping schedule: a Temporal schedule that starts `housekeepingWorkflow` every 10 minutes on the main
 * task queue, one run at a time (a run still going when the next is due makes it skip). Every worker process that
 * serves the main queue makes sure it exists at start; the first creates it, the others find it. Being a schedule
 * in Temporal, not a timer in a process, it runs once per interval for the whole deployment, survives restarts, and
 * can be paused, triggered or inspected by an operator (`temporal schedule describe --schedule-id <id>`).
 */
import { Client, ScheduleAlreadyRunning, ScheduleOptions, ScheduleOverlapPolicy } from '@temporalio/client';
import { msToNumber } from '@temporalio/common/lib/time';
import type { WorkflowType } from '../temporal/contract';

export const HOUSEKEEPING_INTERVAL = '10 minutes';

export const housekeepingScheduleId = (taskQueue: string): string => `${taskQueue}-housekeeping`;

const scheduleOf = (taskQueue: string): Pick<ScheduleOptions, 'spec' | 'action' | 'policies'> => ({
  spec: { intervals: [{ every: HOUSEKEEPING_INTERVAL }] },
  action: { type: 'startWorkflow', workflowType: 'housekeepingWorkflow' satisfies WorkflowType, workflowId: housekeepingScheduleId(taskQueue), taskQueue, args: [] },
  // A missed run is not worth catching up: the next one does the same work.
  policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: HOUSEKEEPING_INTERVAL },
});

/**
 * Creates the schedule unless it exists; one that exists with another interval, overlap policy or task queue (made
 * by an older release) is updated to this release's, keeping its state (paused or not, recent runs). Answers its id.
 */
export async function ensureHousekeepingSchedule(client: Client, taskQueue: string): Promise<string> {
  const scheduleId = housekeepingScheduleId(taskQueue);
  const wanted = scheduleOf(taskQueue);
  try {
    await client.schedule.create({ scheduleId, ...wanted });
    return scheduleId;
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(scheduleId);
  const found = await handle.describe();
  const every = found.spec.intervals?.map((i) => msToNumber(i.every)) ?? [];
  const upToDate = every.length === 1 && every[0] === msToNumber(HOUSEKEEPING_INTERVAL) && found.policies.overlap === ScheduleOverlapPolicy.SKIP
    && found.action.type === 'startWorkflow' && found.action.taskQueue === taskQueue;
  if (upToDate) return scheduleId;
  await handle.update((previous) => ({ ...previous, ...wanted, policies: { ...previous.policies, ...wanted.policies } }));
  return scheduleId;
}
