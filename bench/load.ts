/**
 * Load: HTTP through autocannon (N connections for D seconds, keep-alive, from this process, over loopback), an open
 * loop at a fixed rate (a latency bound judged at a given load), and closed loops of any async call (workflow starts)
 * with the same shape of result.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import autocannon from 'autocannon';
import { percentile } from './stats';

export interface LoadResult {
  /** Successful operations (2xx for HTTP) per second. */
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  ok: number;
  failed: number;
  /** What to know about this result (e.g. nothing answered within the window). */
  note?: string;
}

export async function httpLoad(options: {
  url: string; connections: number; durationSec: number; method?: string; headers?: Record<string, string>; body?: string;
  /** A fresh `Idempotency-Key` on every request, as an integrator sends with each logical call. */
  idempotencyKeys?: boolean;
}): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url, connections: options.connections, duration: options.durationSec, method: options.method ?? 'GET',
    headers: options.headers, body: options.body, timeout: 30,
    ...(options.idempotencyKeys ? {
      requests: [{ setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, 'Idempotency-Key': randomUUID() } }) }],
    } : {}),
  });
  if (result['2xx'] === 0) {
    // Nothing answered within the window: that is the figure (0 per second), with no latency to report.
    return {
      perSecond: 0, p50: NaN, p99: NaN, max: NaN, ok: 0, failed: result.non2xx + result.errors + result.timeouts,
      note: `no 2xx answer within the ${options.durationSec} s window (${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts; requests still in flight at the end are not counted)`,
    };
  }
  return {
    perSecond: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    ok: result['2xx'],
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

/**
 * An open loop: request i is sent at t0 + i / rate, whatever the service's speed (a slow answer never holds the next
 * request back, as it does in a closed loop or in autocannon's per-connection allowance), on as many keep-alive
 * connections as that needs; each is timed from the moment it was due, and every request is awaited after the
 * window, so a late answer counts with its whole lateness. `perSecond` counts the 2xx answers that arrived within the
 * window; `sendLagMs` is the most a request left after it was due (the harness's own delay, part of every latency).
 */
export async function openLoop(options: {
  url: string; ratePerSecond: number; durationSec: number; method?: string; headers?: Record<string, string>; body?: string;
  /** A fresh `Idempotency-Key` on every request. */
  idempotencyKeys?: boolean;
}): Promise<LoadResult & { sent: number; sendLagMs: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const total = Math.round(options.ratePerSecond * options.durationSec);
  const latencies: number[] = [];
  let withinWindow = 0;
  let failed = 0;
  let firstError: string | undefined;
  let sendLagMs = 0;
  const start = performance.now();
  const windowEnd = start + options.durationSec * 1000;
  const send = (due: number) => new Promise<void>((resolve) => {
    let settled = false; // a socket error after the headers reaches both the request and the response: count it once
    const settle = (ok: boolean, why?: string) => {
      if (settled) return;
      settled = true;
      if (ok) {
        const now = performance.now();
        latencies.push(now - due);
        if (now <= windowEnd) withinWindow++;
      } else {
        failed++;
        firstError ??= why;
      }
      resolve();
    };
    const headers: Record<string, string> = { ...options.headers, ...(options.idempotencyKeys ? { 'Idempotency-Key': randomUUID() } : {}) };
    if (options.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(options.body));
    sendLagMs = Math.max(sendLagMs, performance.now() - due);
    const req = http.request(options.url, { method: options.method ?? 'GET', headers, agent, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => settle(res.statusCode! >= 200 && res.statusCode! < 300, `HTTP ${res.statusCode}`))
        .on('error', (err) => settle(false, String(err)));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s'))).on('error', (err) => settle(false, String(err)));
    req.end(options.body);
  });
  const interval = 1000 / options.ratePerSecond;
  const inFlight: Promise<void>[] = [];
  try {
    for (let i = 0; i < total;) {
      // Every request that is due by now goes out (a timer that fired late sends them all, each timed from its due moment).
      for (const now = performance.now(); i < total && start + i * interval <= now; i++) inFlight.push(send(start + i * interval));
      if (i < total) await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + i * interval - performance.now())));
    }
    await Promise.all(inFlight);
  } finally {
    agent.destroy();
  }
  return {
    perSecond: withinWindow / options.durationSec, p50: percentile(latencies, 50), p99: percentile(latencies, 99),
    max: latencies.length ? Math.max(...latencies) : NaN, ok: latencies.length, failed, sent: total, sendLagMs,
    note: `${total} sent, ${failed} failed${firstError ? ` (the first: ${firstError})` : ''}, sent at most ${sendLagMs.toFixed(1)} ms late`,
  };
}

/**
 * `concurrency` loops calling `call` back to back for `durationMs`. Like autocannon, only the calls that complete
 * within the window count (over the window's length), so both kinds of figure carry the same end-of-window cut;
 * the calls still in flight are awaited, not counted.
 */
export async function closedLoop(concurrency: number, durationMs: number, call: (i: number) => Promise<unknown>): Promise<LoadResult> {
  const latencies: number[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let counter = 0;
  const start = Date.now();
  const deadline = start + durationMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < deadline) {
      const t = performance.now();
      try {
        await call(counter++);
        if (Date.now() <= deadline) latencies.push(performance.now() - t);
      } catch (err) {
        failed++;
        firstError ??= String(err);
      }
    }
  }));
  return {
    perSecond: latencies.length / (durationMs / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99),
    max: latencies.length ? Math.max(...latencies) : NaN, ok: latencies.length, failed,
    ...(firstError ? { note: `${failed} failed, the first with: ${firstError}` } : {}),
  };
}

/** A short load before measuring (connections opened, code warm); its figures are dropped and it may answer nothing. */
export async function warmUp(options: Parameters<typeof httpLoad>[0]): Promise<void> {
  await httpLoad(options).catch(() => undefined);
}

/**
 * What repetition (or run) `r` measures, in turn: each starts with the next of `items`, and every other cycle through
 * them goes backwards, so that none is always first and none always follows the same one (what one leaves behind, a
 * backlog or a warm cache, weighs on each alike): over 2n repetitions each item is first twice and follows each other
 * item equally often.
 */
export function inTurn<T>(items: readonly T[], r: number): T[] {
  const k = r % items.length;
  const rotated = [...items.slice(k), ...items.slice(0, k)];
  return Math.floor(r / items.length) % 2 === 0 ? rotated : rotated.reverse();
}

/** Runs `calls` with at most `concurrency` at once; resolves with their results in order. */
export async function inBatches<T>(count: number, concurrency: number, call: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const i = next++;
      results[i] = await call(i);
    }
  }));
  return results;
}
