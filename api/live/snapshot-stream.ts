/**
 * A Server-Sent Events answer that sends a whole view again whenever it changes: the view on connect, then, each
 * time the hub wakes the stream, the view read again and sent only if it differs from the last one sent (at most
 * one read per `minIntervalMs`). No ids: a client that reconnects gets the view as it is then, which is all it needs.
 * The stream ends after `maxSeconds` (the client reconnects through its authentication again) and at shutdown; the
 * answer's plumbing is sse-answer.ts's.
 */
import type { Context } from 'koa';
import { type EventSubscriber } from './action-event-hub';
import { sseAnswer } from './sse-answer';

export interface SnapshotStreamOptions {
  /** The event's name on the wire. */
  event: string;
  /** Registers the stream with the hub; answers its unsubscribe (refusals are ordinary error answers). */
  subscribe: (subscriber: EventSubscriber) => Promise<() => void>;
  /** Reads the view as it is now. */
  read: () => Promise<unknown>;
  heartbeatSeconds: number;
  maxSeconds: number;
  minIntervalMs: number;
  /** Whether a view is the last there will be (a batch that ended): the stream ends once it is sent. */
  final?: (view: unknown) => boolean;
}

export async function streamSnapshots(ctx: Context, options: SnapshotStreamOptions): Promise<void> {
  const answer = sseAnswer(ctx);
  let lastSent = '';
  let reading = false;
  let again = false;
  let lastRead = 0;
  let later: NodeJS.Timeout | undefined;
  answer.onEnd(() => clearTimeout(later));

  const pump = async (): Promise<void> => {
    if (answer.done) return;
    if (reading || later) { again = true; return; }
    const wait = lastRead + options.minIntervalMs - Date.now();
    if (wait > 0) {
      later = setTimeout(() => { later = undefined; void pump(); }, wait);
      return;
    }
    reading = true;
    again = false;
    lastRead = Date.now();
    try {
      const view = await options.read();
      const data = JSON.stringify(view);
      if (data !== lastSent) {
        lastSent = data;
        answer.send(`event: ${options.event}\ndata: ${data}\n\n`);
      }
      if (options.final?.(view)) {
        answer.finish();
        return;
      }
    } catch (err) {
      answer.finish(); // the database failed: the client reconnects
      ctx.app.emit('error', err, ctx);
      return;
    } finally {
      reading = false;
    }
    if (again) { again = false; void pump(); } // woken while reading: read again (after the interval)
  };

  // Until the process listens, a refusal is an ordinary error answer; from here on the answer is written here.
  const unsubscribe = await options.subscribe({ wake: () => void pump(), end: answer.shutDown });
  answer.onEnd(unsubscribe); // at once when the client left meanwhile
  if (answer.done) return;
  answer.open({ heartbeatSeconds: options.heartbeatSeconds, maxSeconds: options.maxSeconds });
  await pump();
}
