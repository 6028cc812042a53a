/**
 * A workflow's steps as its history records them, for tests that check how a workflow ran: activities by type,
 * with the task queue they were scheduled on and the attempt that started, and local activities by the type and
 * attempt their markers record (queue `local`: they ran in the workflow's own worker, within its workflow task).
 */
import type { temporal } from '@temporalio/proto';

type Event = temporal.api.history.v1.IHistoryEvent;

export interface Step { type: string; queue: string; attempt: number }

export function stepsOf(events: Event[]): Step[] {
  const startedAttempt = new Map<string, number>();
  for (const e of events) {
    const started = e.activityTaskStartedEventAttributes;
    if (started) startedAttempt.set(String(started.scheduledEventId), started.attempt ?? 0);
  }
  return events.flatMap((e): Step[] => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) return [{ type: scheduled.activityType!.name!, queue: scheduled.taskQueue!.name!, attempt: startedAttempt.get(String(e.eventId)) ?? 0 }];
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = JSON.parse(Buffer.from(marker.details!.data!.payloads![0].data!).toString('utf8'));
    return [{ type: data.activity_type, queue: 'local', attempt: data.attempt }];
  });
}
