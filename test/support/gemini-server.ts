/**
 * A local stand-in for the Gemini API that speaks its documented wire format (ai.google.dev/api/generate-content):
 * `POST /v1beta/models/{model}:generateContent` with the key in `x-goog-api-key`, camelCase JSON both ways, and
 * Google's error body `{"error": {"code", "message", "status"}}`. It records every request and answers from a
 * per-test script, then from a default answer. Plain HTTP on loopback: the SDK takes any base URL.
 */
import http from 'node:http';
import { AddressInfo } from 'node:net';

export interface GeminiRequest {
  model: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** One scripted answer: a 200 body (or raw text), an HTTP error, or no answer at all (the client's deadline runs out). */
export type GeminiReply = { status: 200; body: object } | { status: 200; raw: string } | { status: number; message?: string } | 'hang';

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 402: 'FAILED_PRECONDITION', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

export interface GeminiServer {
  baseUrl: string;
  apiKey: string;
  requests: GeminiRequest[];
  /** Answers for the next calls, in order; once used up, `fallback` answers. */
  script(...replies: GeminiReply[]): void;
  fallback: (request: GeminiRequest) => GeminiReply | Promise<GeminiReply>;
  close(): Promise<void>;
}

// Answers as Gemini shapes them.
const candidate = (parts: object[], finishReason = 'STOP') => ({ candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }] });
const inline = (bytes: Buffer, mimeType: string) => ({ inlineData: { mimeType, data: bytes.toString('base64') } });

/** An image answer as thinking image models give it: a draft image in a `thought` part first, the final one last. */
export function imageAnswer(bytes: Buffer, mimeType = 'image/png', draft?: Buffer): GeminiReply {
  const thoughts = draft ? [{ text: 'Planning the composition.', thought: true }, { ...inline(draft, 'image/png'), thought: true }] : [];
  return { status: 200, body: candidate([...thoughts, { text: 'Here is the image.' }, inline(bytes, mimeType)]) };
}

export const jsonAnswer = (value: unknown): GeminiReply => ({ status: 200, body: candidate([{ text: JSON.stringify(value) }]) });
export const textAnswer = (text: string, finishReason = 'STOP'): GeminiReply => ({ status: 200, body: candidate([{ text }], finishReason) });
export const finishedWith = (finishReason: string, finishMessage?: string): GeminiReply =>
  ({ status: 200, body: { candidates: [{ content: { role: 'model', parts: [] }, finishReason, ...(finishMessage ? { finishMessage } : {}), index: 0 }] } });
export const blocked = (blockReason: string, blockReasonMessage?: string): GeminiReply =>
  ({ status: 200, body: { promptFeedback: { blockReason, ...(blockReasonMessage ? { blockReasonMessage } : {}) } } });
export const httpError = (status: number, message = `scripted ${status}`): GeminiReply => ({ status, message });

export async function startGeminiServer(fallback: GeminiServer['fallback'], apiKey = 'test-gemini-key'): Promise<GeminiServer> {
  const requests: GeminiRequest[] = [];
  const queue: GeminiReply[] = [];
  const send = (res: http.ServerResponse, status: number, body: object) =>
    res.writeHead(status, { 'Content-Type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
  const error = (res: http.ServerResponse, code: number, message: string) =>
    send(res, code, { error: { code, message, status: STATUS_NAMES[code] ?? 'UNKNOWN' } });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => void (async () => {
      const route = /^\/v1beta\/models\/([^/:]+):generateContent$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !route) return error(res, 404, `Method or path not found: ${req.method} ${req.url}`);
      if (req.headers['x-goog-api-key'] !== handle.apiKey) return error(res, 400, 'API key not valid. Please pass a valid API key.');
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return error(res, 400, 'Invalid JSON payload received.');
      }
      const request: GeminiRequest = { model: route[1], path: req.url!, headers: req.headers, body };
      requests.push(request);
      const reply = queue.shift() ?? await handle.fallback(request);
      if (reply === 'hang') return; // never answers; the client gives up
      if ('body' in reply) return send(res, 200, reply.body);
      if ('raw' in reply) return res.writeHead(200, { 'Content-Type': 'application/json' }).end(reply.raw);
      return error(res, reply.status, ('message' in reply && reply.message) || `scripted ${reply.status}`);
    })().catch(() => res.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const handle: GeminiServer = {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    apiKey,
    requests,
    script: (...replies) => void queue.push(...replies),
    fallback,
    close: () => new Promise((resolve) => {
      queue.length = 0;
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return handle;
}
