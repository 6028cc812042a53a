/**
 * Waiting for an action or a job to end: its live-progress stream (Server-Sent Events) followed to the final event,
 * resumed with `Last-Event-ID` when the stream ends early; polling (at the job's `check_again_in_sec`) when the stream
 * cannot be had.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ApiError } from './errors.js';
import { sleep } from './retry.js';

export interface WaitOptions {
  /** Stops the wait: it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Gives up after this long: the wait rejects with a `TimeoutError` (a `DOMException`). */
  timeoutMs?: number;
  /** Each live-progress event as it comes (`progress`, then the final one named after the final status). */
  onEvent?: (event: LiveEvent) => void;
  /** The pause between polls when the answer gives no hint (v1 actions) and the stream cannot be had: 2 s. */
  pollIntervalMs?: number;
}

/** One event of an action's or job's live progress. */
export interface LiveEvent {
  id: string;
  /** `progress`, or the final status (`completed`, `failed`, `cancelled`; v2 `succeeded`, `failed`, `dead_letter`, `cancelled`). */
  name: string;
  data: Record<string, unknown>;
}

/** What the wait of one kind of id needs. */
export interface WaitTarget<T> {
  /** The stream's URL. */
  streamUrl: string;
  /** The final statuses (and so the final events' names). */
  finals: ReadonlySet<string>;
  /** Reads the action or job now. */
  read: (signal: AbortSignal) => Promise<T>;
  status: (answer: T) => string;
  /** The answer's polling hint in seconds (`check_again_in_sec`), when it has one. */
  hint: (answer: T) => number | null | undefined;
}

/** A stream given up on this many times in a row: poll for the rest of the wait. */
const STREAM_TRIES = 2;

export async function waitFor<T>(target: WaitTarget<T>, fetch: typeof globalThis.fetch, headers: Record<string, string>, options: WaitOptions = {}): Promise<T> {
  const signals = [options.signal, options.timeoutMs !== undefined ? AbortSignal.timeout(options.timeoutMs) : undefined].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length > 0 ? AbortSignal.any(signals) : new AbortController().signal;
  const stream: StreamState = { failures: 0, retryMs: DEFAULT_RECONNECT_MS };
  for (;;) {
    signal.throwIfAborted();
    if (stream.failures < STREAM_TRIES) {
      const outcome = await follow(target, fetch, headers, stream, signal, options.onEvent);
      if (outcome === 'final') return target.read(signal);
      if (outcome === 'ended') { // resumed from the last event seen, after the pause the stream asked for (`retry:`)
        await sleep(stream.retryMs, signal);
        continue;
      }
    }
    const answer = await target.read(signal);
    if (target.finals.has(target.status(answer))) return answer;
    const hinted = target.hint(answer);
    await sleep(Math.max(MIN_POLL_MS, hinted != null ? hinted * 1000 : options.pollIntervalMs ?? 2000), signal);
  }
}

interface StreamState { lastEventId?: string; failures: number; retryMs: number }

/** The pause before a stream that ended early is resumed, until the stream says otherwise (`retry:`). */
const DEFAULT_RECONNECT_MS = 1000;
/** The shortest pause between polls, whatever is asked. */
const MIN_POLL_MS = 250;

/**
 * Follows the stream from `stream.lastEventId`: `final` when the final event came (or the service said, 204, that
 * it already had), `ended` when the stream ended without it (resume), `failed` when it could not be had.
 */
async function follow<T>(
  target: WaitTarget<T>, fetch: typeof globalThis.fetch, headers: Record<string, string>,
  stream: StreamState, signal: AbortSignal, onEvent?: (event: LiveEvent) => void,
): Promise<'final' | 'ended' | 'failed'> {
  let response: Response;
  try {
    response = await fetch(target.streamUrl, {
      headers: { ...headers, Accept: 'text/event-stream', ...(stream.lastEventId ? { 'Last-Event-ID': stream.lastEventId } : {}) }, signal,
    });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    stream.failures++;
    return 'failed';
  }
  if (response.status === 204) return 'final';
  if (!response.ok || !response.body) {
    const body = await response.text().catch(() => '');
    if ([401, 403, 404].includes(response.status)) throw ApiError.of(response, parseJson(body)); // polling would answer the same
    stream.failures++;
    return 'failed';
  }
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event), onRetry: (ms) => { stream.retryMs = Math.min(Math.max(ms, MIN_POLL_MS), 60_000); } });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let heard = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        if (heard) return 'ended';
        stream.failures++; // a stream that closes before any event is not followed again and again
        return 'failed';
      }
      parser.feed(value);
      for (const event of events.splice(0)) {
        if (event.id) stream.lastEventId = event.id;
        heard = true;
        stream.failures = 0;
        const name = event.event ?? 'message';
        onEvent?.({ id: event.id ?? '', name, data: parseJson(event.data) as Record<string, unknown> });
        if (target.finals.has(name)) return 'final';
      }
    }
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    stream.failures++;
    return 'failed';
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
