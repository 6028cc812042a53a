/**
 * A Server-Sent Events answer over an action's event log (`action_events`): every event after the one the client
 * last saw (`Last-Event-ID`, or `last_event_id` in the query for clients that cannot set headers), in order, each
 * with its `id:` (the event's sequence number within the action), then live ones as the shared LISTEN connection
 * announces them; a heartbeat comment every `LIVE_HEARTBEAT_SECONDS` (15 s); the final event ends the answer. A
 * stream still open after `LIVE_STREAM_MAX_SECONDS` (an hour) is ended without one: the client reconnects with its
 * Last-Event-ID, as after any drop, so that no stream (and no count against its key's limit) is held for ever.
 *
 * Per stream the process keeps one closure, one timer and the socket: no buffer of its own. What the socket has
 * not taken is bounded: past `MAX_UNSENT_BYTES` the stream is ended, and the client resumes from its last id.
 */
import type { Context } from 'koa';
import type { DataSource } from 'typeorm';
import { prepared, preparedRows } from '../../src/db/prepared';
import { ValidationFailed } from '../../src/errors';
import type { Caller } from '../../src/services';
import type { ActionEventHub } from './action-event-hub';

/** What a client may leave unread before its stream is ended (it resumes with Last-Event-ID). */
export const MAX_UNSENT_BYTES = 64 * 1024;
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
  const res = ctx.res;
  let last = after;
  let done = false;
  let reading = false;
  let again = false;
  let unsubscribe: (() => void) | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let lifetime: NodeJS.Timeout | undefined;

  const finish = () => {
    if (done) return;
    done = true;
    clearInterval(heartbeat);
    clearTimeout(lifetime);
    unsubscribe?.();
    if (!res.writableEnded) res.end();
  };
  const send = (chunk: string) => {
    if (done) return;
    res.write(chunk);
    if (res.writableLength > MAX_UNSENT_BYTES) { // a client that does not read: cut, it resumes from its last id
      finish();
      res.destroy();
    }
  };
  const pump = async (): Promise<void> => {
    if (done) return;
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
            if (done) return;
            last = row.seq;
            if (!rendered) continue;
            page += `id: ${row.seq}\nevent: ${rendered.event}\ndata: ${JSON.stringify(rendered.data)}\n\n`;
            if ((final = rendered.final)) break;
          }
          if (page) send(page);
          if (final) { finish(); return; }
        } while (rows.length === PAGE && !done);
      } while (again && !done);
    } catch (err) {
      finish(); // the database failed: the client resumes from its last id
      ctx.app.emit('error', err, ctx);
    } finally {
      reading = false;
    }
  };

  res.on('close', finish);
  // At shutdown the connection goes too (once the end is written), so that the server's close does not wait for it.
  const shutDown = () => {
    if (done) return;
    res.once('finish', () => res.socket?.end());
    finish();
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
  unsubscribe = await liveEvents.subscribe(actionId, keyId, { wake: () => void pump(), end: shutDown });
  ctx.respond = false;
  if (done) { unsubscribe(); return; } // the client left meanwhile
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    'X-Accel-Buffering': 'no', // nginx: pass each event on at once
  });
  res.socket?.setNoDelay(true);
  send('retry: 3000\n\n');
  const { heartbeatSeconds, maxSeconds } = liveEvents.limits;
  heartbeat = setInterval(() => send(': heartbeat\n\n'), heartbeatSeconds * 1000);
  heartbeat.unref();
  lifetime = setTimeout(() => { send(': stream lifetime reached, reconnect with Last-Event-ID\n\n'); finish(); }, maxSeconds * 1000);
  lifetime.unref();
  await pump();
}
