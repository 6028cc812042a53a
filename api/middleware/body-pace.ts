import type { Middleware } from 'koa';

/**
 * The rate a request body must keep on average, after `HTTP_IDLE_TIMEOUT_SECONDS` of grace: 128 kbit/s, an eighth of
 * a poor 1 Mbit/s uplink, so it cuts a client trickling bytes to hold its connection and reserved bytes, not a slow link.
 */
export const MIN_BODY_BYTES_PER_SECOND = 16 * 1024;

/**
 * Watches a body arriving: `expire` is called once nothing came for `idleMs`, or once the body has fallen more than
 * `idleMs` behind MIN_BODY_BYTES_PER_SECOND (each byte buys 1/MIN_BODY_BYTES_PER_SECOND s, so a large body is never
 * cut for its size, a trickle is). Bytes are reported by `arrived`, or sampled by `received` (a running total) each
 * time the watch wakes. Returns what stops the watch.
 */
export function watchBodyPace(idleMs: number, expire: () => void, received?: () => number): { arrived(bytes: number): void; stop(): void } {
  const started = Date.now();
  let last = started;
  let bytes = 0;
  let sampled = received?.() ?? 0;
  let timer: NodeJS.Timeout | undefined;
  const arrived = (count: number) => {
    bytes += count;
    last = Date.now();
  };
  const check = () => {
    if (received) {
      const total = received();
      if (total !== sampled) arrived(total - sampled);
      sampled = total;
    }
    const left = Math.min(last + idleMs, started + idleMs + (bytes * 1000) / MIN_BODY_BYTES_PER_SECOND) - Date.now();
    // The deadline only moves later, so waking at the one known now is never late; a sampled body wakes oftener.
    if (left <= 0) expire();
    else timer = setTimeout(check, received ? Math.min(left, Math.max(10, idleMs / 4)) : left);
  };
  check();
  return { arrived, stop: () => clearTimeout(timer) };
}

/**
 * A request answered before its body was read (no key, the rate limit, a Content-Length over the cap, no such route)
 * keeps its connection while Node drops the rest of the body, so that the client can finish sending and read the
 * answer. Such a body keeps the deadline of one that is read: its connection is closed once the body stalls or
 * trickles, not only at the whole request's deadline (`HTTP_REQUEST_TIMEOUT_SECONDS`).
 */
export function unreadBodyDeadline(idleMs: number): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      const { req } = ctx;
      if (!req.complete && !req.destroyed) {
        const socket = req.socket;
        const watch = watchBodyPace(idleMs, () => socket.destroy(), () => socket.bytesRead);
        const stop = () => {
          watch.stop();
          req.off('end', stop).off('close', stop);
        };
        req.once('end', stop).once('close', stop);
      }
    }
  };
}
