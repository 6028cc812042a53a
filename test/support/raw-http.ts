/**
 * HTTP below `fetch`, for what `fetch` will not send: a path exactly as written, any headers (a Content-Length
 * that the body does not have, no Content-Type), and a body streamed chunk by chunk.
 */
import http from 'node:http';
import type { Readable } from 'node:stream';

export interface RawRequest {
  method: string;
  /** Sent as is (percent-encode what must be). */
  path: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer | Readable;
  /** An answer of `text/event-stream` (a live-progress stream, which may never end) is answered at its headers. */
  streamAtHeaders?: boolean;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: any;
}

/**
 * Answers with the response as soon as it is complete, even when the server answered before reading the body.
 * Each request has its own connection, closed by this side once answered: the server keeps it open (so a body it
 * refused can still be sent without a reset), and no half-sent body can run into the next request.
 */
export function rawRequest(baseUrl: string, request: RawRequest): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let answered = false;
    const { body } = request;
    // Node frames a body of GET or DELETE only when told how.
    const framing = body === undefined ? {} : typeof body === 'string' || Buffer.isBuffer(body) ? { 'Content-Length': Buffer.byteLength(body) } : { 'Transfer-Encoding': 'chunked' };
    const headers = { Connection: 'keep-alive', ...framing, ...request.headers };
    const req = http.request({ host: hostname, port, method: request.method, path: request.path, headers, agent: false });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.on('response', (res) => {
      if (request.streamAtHeaders && String(res.headers['content-type']).startsWith('text/event-stream')) {
        answered = true;
        resolve({ status: res.statusCode!, headers: res.headers, text: '' });
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        answered = true;
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
        req.destroy();
        if (typeof request.body === 'object' && !Buffer.isBuffer(request.body)) request.body.destroy();
      });
    });
    if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) req.end(body);
    else body.pipe(req);
  });
}
