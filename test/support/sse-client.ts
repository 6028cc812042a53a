/**
 * A small Server-Sent Events client for tests: one HTTP request (its own connection), the answer parsed as the
 * WHATWG spec says (fields `id`, `event`, `data`, comments, a blank line dispatching an event), the events and
 * comments kept in order, and ways to wait for an event or for the server to end the answer.
 */
import http from 'node:http';

export interface SseEvent {
  id: string;
  event: string;
  data: any;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: SseEvent[];
  comments: string[];
  /** Resolves once the server has ended the answer. */
  ended: Promise<void>;
  /** Resolves with the first event (seen or to come) that passes `test`. */
  waitFor(test: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves once `count` comments have arrived. */
  waitForComments(count: number, timeoutMs?: number): Promise<void>;
  /** Drops the connection (a client going away). */
  drop(): void;
  /** The body when the answer was not a stream (an error). */
  text: string;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { Accept: 'text/event-stream', ...headers }, agent: false }, (res) => {
      const stream: SseStream = {
        status: res.statusCode!, headers: res.headers, events: [], comments: [], text: '',
        ended: new Promise((done) => { res.on('end', done); res.on('close', done); }),
        waitFor: (test, timeoutMs = 60_000) => waitUntil(() => stream.events.find(test), timeoutMs, () => `no such event in ${JSON.stringify(stream.events)}`),
        waitForComments: async (count, timeoutMs = 30_000) => {
          await waitUntil(() => (stream.comments.length >= count ? true : undefined), timeoutMs, () => `${stream.comments.length} comments`);
        },
        drop: () => req.destroy(),
      };
      const listeners: (() => void)[] = [];
      const waitUntil = <T>(probe: () => T | undefined, timeoutMs: number, what: () => string): Promise<T> => new Promise((ok, fail) => {
        const check = () => {
          const found = probe();
          if (found !== undefined) { clearTimeout(timer); listeners.splice(listeners.indexOf(check), 1); ok(found); }
        };
        const timer = setTimeout(() => { listeners.splice(listeners.indexOf(check), 1); fail(new Error(`timed out: ${what()}`)); }, timeoutMs);
        listeners.push(check);
        check();
      });
      const notify = () => { for (const l of [...listeners]) l(); };

      res.setEncoding('utf8');
      if (!String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.on('data', (chunk: string) => { stream.text += chunk; });
        res.on('end', () => resolve(stream));
        return;
      }
      let buffer = '';
      let event: { id?: string; event?: string; data: string[] } = { data: [] };
      let lastId = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        const lineEnd = /\r\n|\r|\n/g; // lines read by position, the rest kept once per chunk
        let start = 0;
        let match: RegExpExecArray | null;
        while ((match = lineEnd.exec(buffer)) !== null) {
          const line = buffer.slice(start, match.index);
          start = match.index + match[0].length;
          if (line === '') {
            if (event.id !== undefined) lastId = event.id;
            if (event.data.length > 0) {
              stream.events.push({ id: lastId, event: event.event ?? 'message', data: JSON.parse(event.data.join('\n')) });
            }
            event = { data: [] };
            continue;
          }
          if (line.startsWith(':')) { stream.comments.push(line.slice(1).trim()); continue; }
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') event.data.push(value);
          else if (field === 'event') event.event = value;
          else if (field === 'id') event.id = value;
        }
        buffer = buffer.slice(start);
        notify();
      });
      res.on('error', () => undefined); // a dropped connection
      resolve(stream);
    });
    req.on('error', reject);
  });
}
