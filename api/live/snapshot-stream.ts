/**
 * A Server-Sent Events answer that sends a whole view again whenever it changes: the view on connect, then, each
 * time the hub wakes the stream, the view read again and sent only if it differs from the last one sent (at most
 * one read per `minIntervalMs`). No ids: a client that reconnects gets the view as it is then, which is all it needs.
 * The stream ends after `maxSeconds` (the client reconnects through its authentication again) and at shutdown; a
 * heartbeat comment keeps it open through proxies. What the socket has not taken is bounded as for action streams.
 */
import type { Context } from 'koa';
import { type EventSubscriber } from './action-event-hub';
import { MAX_UNSENT_BYTES } from './event-stream';

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
}

export async function streamSnapshots(ctx: Context, options: SnapshotStreamOptions): Promise<void> {
  const res = ctx.res;
  let done = false;
  let lastSent = '';
  let reading = false;
  let again = false;
  let lastRead = 0;
  let unsubscribe: (() => void) | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let lifetime: NodeJS.Timeout | undefined;
  let later: NodeJS.Timeout | undefined;

  const finish = () => {
    if (done) return;
    done = true;
    clearInterval(heartbeat);
    clearTimeout(lifetime);
    clearTimeout(later);
    unsubscribe?.();
    if (!res.writableEnded) res.end();
  };
  const send = (chunk: string) => {
    if (done) return;
    res.write(chunk);
    if (res.writableLength > MAX_UNSENT_BYTES) {
      finish();
      res.destroy();
    }
  };
  const pump = async (): Promise<void> => {
    if (done) return;
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
      const data = JSON.stringify(await options.read());
      if (data !== lastSent) {
        lastSent = data;
        send(`event: ${options.event}\ndata: ${data}\n\n`);
      }
    } catch (err) {
      finish(); // the database failed: the client reconnects
      ctx.app.emit('error', err, ctx);
      return;
    } finally {
      reading = false;
    }
    if (again) { again = false; void pump(); } // woken while reading: read again (after the interval)
  };

  res.on('close', finish);
  const shutDown = () => {
    if (done) return;
    res.once('finish', () => res.socket?.end());
    finish();
  };
  unsubscribe = await options.subscribe({ wake: () => void pump(), end: shutDown });
  ctx.respond = false;
  if (done) { unsubscribe(); return; }
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' });
  res.socket?.setNoDelay(true);
  send('retry: 3000\n\n');
  heartbeat = setInterval(() => send(': heartbeat\n\n'), options.heartbeatSeconds * 1000);
  heartbeat.unref();
  lifetime = setTimeout(finish, options.maxSeconds * 1000);
  lifetime.unref();
  await pump();
}
