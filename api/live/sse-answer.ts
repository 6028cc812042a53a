/**
 * The answer of a Server-Sent Events stream, for the live-progress streams and the dashboard's snapshot streams
 * alike: written by the stream itself (Koa does not respond), ended once (by the stream, the client leaving, its
 * lifetime or the process's shutdown), with a heartbeat comment, and cut when the client leaves more than
 * MAX_UNSENT_BYTES unread (it reconnects). Per stream: one closure, two timers and the socket, no buffer of its own.
 */
import type { Context } from 'koa';

/** What a client may leave unread before its stream is ended (it resumes with Last-Event-ID). */
export const MAX_UNSENT_BYTES = 64 * 1024;

export interface SseAnswer {
  /** Whether the answer has ended. */
  readonly done: boolean;
  send(chunk: string): void;
  /** Ends the answer (once). */
  finish(): void;
  /** Ends it for the process's shutdown: the connection goes too once the end is written. */
  shutDown(): void;
  /** Runs `cleanup` when the answer ends (an unsubscribe). */
  onEnd(cleanup: () => void): void;
  /**
   * Writes the head (200, `retry: 3000`) and starts the heartbeat and the lifetime, after which the answer ends
   * (with `lastWords` as a comment, when given).
   */
  open(timing: { heartbeatSeconds: number; maxSeconds: number; lastWords?: string }): void;
}

export function sseAnswer(ctx: Context): SseAnswer {
  const res = ctx.res;
  const cleanups: (() => void)[] = [];
  let done = false;
  const answer: SseAnswer = {
    get done() { return done; },
    send(chunk) {
      if (done) return;
      res.write(chunk);
      if (res.writableLength > MAX_UNSENT_BYTES) { // a client that does not read: cut, it reconnects
        answer.finish();
        res.destroy();
      }
    },
    finish() {
      if (done) return;
      done = true;
      for (const cleanup of cleanups.splice(0)) cleanup();
      if (!res.writableEnded) res.end();
    },
    shutDown() {
      if (done) return;
      res.once('finish', () => res.socket?.end()); // so that the server's close does not wait for this connection
      answer.finish();
    },
    onEnd(cleanup) {
      if (done) cleanup();
      else cleanups.push(cleanup);
    },
    open({ heartbeatSeconds, maxSeconds, lastWords }) {
      ctx.respond = false;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        'X-Accel-Buffering': 'no', // nginx: pass each event on at once
      });
      res.socket?.setNoDelay(true);
      answer.send('retry: 3000\n\n');
      const heartbeat = setInterval(() => answer.send(': heartbeat\n\n'), heartbeatSeconds * 1000);
      heartbeat.unref();
      const lifetime = setTimeout(() => {
        if (lastWords) answer.send(`: ${lastWords}\n\n`);
        answer.finish();
      }, maxSeconds * 1000);
      lifetime.unref();
      answer.onEnd(() => { clearInterval(heartbeat); clearTimeout(lifetime); });
    },
  };
  res.on('close', () => answer.finish());
  return answer;
}
