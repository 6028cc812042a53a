/**
 * A Server-Sent Events answer over an action's event log (`action_events`): every event after the one the client
 * last saw (`Last-Event-ID`, or `last_event_id` in the query for clients that cannot set headers), in order, each
 * with its `id:` (the event's sequence number within the action), then live ones as the shared LISTEN connection
 * announces them; a heartbeat comment every `LIVE_HEARTBEAT_SECONDS` (15 s); the final event ends the answer. A
 * stream still open after `LIVE_STREAM_MAX_SECONDS` (an hour) is ended without one: the client reconnects with its
 * Last-Event-ID, as after any drop, so that no stream (and no count against its key's limit) is held for ever.
 *
 * The answer's plumbing (head, heartbeat, lifetime, the unread bytes' bound, shutdown) is sse-answer.ts's.
 */
import type { Context } from 'koa';
import type { DataSource } from 'typeorm';
import { prepared, preparedRows } from '../../src/db/prepared';
import { ValidationFailed } from '../../src/errors';
import type { Caller } from '../../src/services';
import type { ActionEventHub } from './action-event-hub';
import { sseAnswer } from './sse-answer';

/** Events read from the log at once. */
const PAGE = 100;

export interface ActionEventRow {
  seq: number; action_status: string; job_status: string | null; phase: string | null; attempt: number | null;
  provider: string | null; percent: number | null; created_at: Date;
}

const EVENTS_AFTER = prepared('action_events_after', `
  SELECT seq, action_status, job_status, phase, attempt, provider, percent, created_at
    FROM action_events WHERE action_id = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE}`);

const EVENT_AT = prepared('action_event_at', `
  SELECT seq, action_status, job_status, phase, attempt, provider, percent, created_at
    FROM action_events WHERE action_id = $1 AND seq = $2`);

/** What one event of the log is on the wire: its name, its JSON data, and whether it ends the stream; null: not for this stream. */
export type RenderEvent = (row: ActionEventRow) => Promise<{ event: string; data: Record<string, unknown>; final: boolean } | null>;

/** The last event id the client saw: the header, else the `last_event_id` query parameter, else 0 (from the start). */
export function lastEventId(ctx: Context, fromQuery: unknown): number {
  const sent = ctx.get('Last-Event-ID') || (typeof fromQuery === 'string' ? fromQuery : '');
  if (sent === '') return 0;
  if (!/^\d{1,9}$/.test(sent)) {
    throw new ValidationFailed([{ loc: ['header', 'Last-Event-ID'], msg: 'must be the id of an event of this stream (a whole number)', type: 'value_error' }]);
  }
  return Number(sent);
}

/** The `Last-Event-ID` header, for the route's description. */
export const lastEventIdHeaders = [
  { name: 'Last-Event-ID', description: 'Resume after this event (sent by EventSource on reconnect)', schema: { type: 'string', pattern: '^[0-9]+$' } },
];

/** The query parameter of `lastEventId`, for the route's query schema. */
export const lastEventIdQuery = {
  type: 'object',
  properties: {
    last_event_id: { type: 'string', maxLength: 9, pattern: '^[0-9]+$', description: 'The `Last-Event-ID` header, for clients that cannot set one; the header wins' },
  },
};

/** The stream of `actionId`'s events after `after`, for the caller of `ctx` (whose key's stream count it takes). */
export async function streamActionEvents(
  ctx: Context, services: { db: DataSource; liveEvents: ActionEventHub }, actionId: number, after: number, render: RenderEvent,
): Promise<void> {
  const { db, liveEvents } = services;
  const answer = sseAnswer(ctx);
  let last = after;
  let reading = false;
  let again = false;

  const pump = async (): Promise<void> => {
    if (answer.done) return;
    if (reading) { again = true; return; }
    reading = true;
    try {
      do {
        again = false;
        let rows: ActionEventRow[];
        do {
          rows = await preparedRows<ActionEventRow>(db, EVENTS_AFTER, [actionId, last]);
          let page = ''; // one write per page of events, not one per event
          let final = false;
          for (const row of rows) {
            const rendered = await render(row);
            if (answer.done) return;
            last = row.seq;
            if (!rendered) continue;
            page += `id: ${row.seq}\nevent: ${rendered.event}\ndata: ${JSON.stringify(rendered.data)}\n\n`;
            if ((final = rendered.final)) break;
          }
          if (page) answer.send(page);
          if (final) { answer.finish(); return; }
        } while (rows.length === PAGE && !answer.done);
      } while (again && !answer.done);
    } catch (err) {
      answer.finish(); // the database failed: the client resumes from its last id
      ctx.app.emit('error', err, ctx);
    } finally {
      reading = false;
    }
  };

  // A client that has seen the final event (an EventSource reconnects after the server ended its stream) gets 204,
  // which tells it to stop reconnecting, instead of a stream that would never send anything again.
  if (after > 0) {
    const [seen] = await preparedRows<ActionEventRow>(db, EVENT_AT, [actionId, after]);
    if (seen && (await render(seen))?.final) {
      ctx.status = 204;
      return;
    }
  }
  // Until the process listens, a failure is an ordinary error answer; from here on the answer is written here.
  const { keyId } = ctx.state.caller as Caller;
  const unsubscribe = await liveEvents.subscribe(actionId, keyId, { wake: () => void pump(), end: answer.shutDown });
  answer.onEnd(unsubscribe); // at once when the client left meanwhile
  if (answer.done) return;
  answer.open({ ...liveEvents.limits, lastWords: 'stream lifetime reached, reconnect with Last-Event-ID' });
  await pump();
}
