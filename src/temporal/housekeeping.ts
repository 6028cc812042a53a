/**
 * The housekeeping schedule: a Temporal schedule that starts `housekeepingWorkflow` every 10 minutes on the main
 * task queue, one run at a time (a run still going when the next is due makes it skip). Every worker process that
 * serves the main queue makes sure it exists at start; the first creates it, the others find it. Being a schedule
 * in Temporal, not a timer in a process, it runs once per interval for the whole deployment, survives restarts, and
 * can be paused, triggered or inspected by an operator (`temporal schedule describe --schedule-id <id>`).
 */
import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';

export const HOUSEKEEPING_INTERVAL = '10 minutes';

export const housekeepingScheduleId = (taskQueue: string): string => `${taskQueue}-housekeeping`;

/** Creates the schedule unless it exists; answers its id. */
export async function ensureHousekeepingSchedule(client: Client, taskQueue: string): Promise<string> {
  const scheduleId = housekeepingScheduleId(taskQueue);
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: HOUSEKEEPING_INTERVAL }] },
      action: { type: 'startWorkflow', workflowType: 'housekeepingWorkflow', workflowId: scheduleId, taskQueue, args: [] },
      // A missed run is not worth catching up: the next one does the same work.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: HOUSEKEEPING_INTERVAL },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  return scheduleId;
}
