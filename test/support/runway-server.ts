/**
 * A local Runway API speaking the documented wire format (docs.dev.runwayml.com; @runwayml/sdk's request and
 * response types): `POST /v1/image_to_video`, `GET /v1/tasks/{id}`, `DELETE /v1/tasks/{id}`, with the headers
 * checked (`Authorization: Bearer <key>`, `X-Runway-Version: 2024-11-06`) and errors as `{"error": "..."}`.
 * It serves over HTTPS with the suite's certificate, like Runway, so that the output URLs it hands out are
 * downloaded through the service's outbound policy (HTTPS only) as real ones are.
 *
 * Tests script it: `nextTask(...)` sets the states the next submitted task goes through (one per poll, the last
 * one repeating), `failNext(...)` queues error answers (or a hang) for a route, and `requests` logs everything.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/media/ffmpeg';
import { startHttpsServer, TestHttpsServer } from './https-server';
import { LyingAnswer, sendLyingAnswer } from './lying-answer';

export const RUNWAY_VERSION = '2024-11-06';
export const RUNWAY_TEST_KEY = `key_${'0123456789abcdef'.repeat(8)}`;

/** One state a scripted task answers on a poll. */
export type TaskState =
  | { status: 'PENDING' | 'THROTTLED' | 'CANCELLED' }
  | { status: 'RUNNING'; progress: number }
  | { status: 'SUCCEEDED'; /** The bytes behind the output URL (default: a real 1-second MP4). */ output?: Buffer }
  | { status: 'FAILED'; failureCode?: string; failure?: string };

/**
 * A scripted error answer: a status with `{"error": message}`, no answer at all (the request hangs), or (for an
 * output) the MP4 under a Content-Length that lies about it (`lying-answer.ts`).
 */
export type ErrorAnswer = { status: number; error?: string } | 'hang' | { lying: Omit<LyingAnswer, 'body'> };

export type Route = 'submit' | 'poll' | 'cancel' | 'output';

export interface RunwayTask {
  id: string;
  body: Record<string, any>;
  states: TaskState[];
  polls: number;
  cancelled: boolean;
}

export interface RunwayServer {
  /** The SDK's `baseURL` (and `RUNWAY_BASE_URL`). */
  url: string;
  apiKey: string;
  /** Every request received, in order (method, path, headers, raw body). */
  requests: TestHttpsServer['requests'];
  /** The tasks created, in order of submission. */
  tasks: RunwayTask[];
  /** The states of the next submitted task (default: PENDING, RUNNING 0.5, SUCCEEDED). */
  nextTask(...states: TaskState[]): void;
  /** Queues error answers for the next requests of a route; each answer is used once. */
  failNext(route: Route, ...answers: ErrorAnswer[]): void;
  close(): Promise<void>;
}

const DEFAULT_STATES: TaskState[] = [{ status: 'PENDING' }, { status: 'RUNNING', progress: 0.5 }, { status: 'SUCCEEDED' }];

/** An MP4 made by the renderer's ffmpeg from a lavfi source (`testsrc=...`, `sine=...`), encoded with `codec` args. */
export async function lavfiMp4(source: string, codec: string[] = ['-c:v', 'libx264', '-pix_fmt', 'yuv420p']): Promise<Buffer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runway-sample-'));
  try {
    const file = path.join(dir, 'sample.mp4');
    await promisify(execFile)(resolveFfmpeg(process.env.FFMPEG_PATH), ['-hide_banner', '-loglevel', 'error',
      '-f', 'lavfi', '-i', source, ...codec, '-movflags', '+faststart', file]);
    return await readFile(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

let sample: Promise<Buffer> | undefined;

/** A real, small H.264 MP4 (1 s, 128x96), made once per test run with the renderer's ffmpeg. */
export function sampleMp4(): Promise<Buffer> {
  sample ??= lavfiMp4('testsrc=size=128x96:rate=24:duration=1');
  return sample;
}

const send = (res: ServerResponse, status: number, body?: unknown): void => {
  if (body === undefined) return void res.writeHead(status).end();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
};

/** What Runway checks of a submit (a subset: enough to catch a malformed request). */
function submitProblem(body: Record<string, any>): string | undefined {
  if (typeof body.model !== 'string') return 'model: Required';
  const images = typeof body.promptImage === 'string' ? [{ uri: body.promptImage, position: 'first' }] : body.promptImage;
  if (!Array.isArray(images) || images.length === 0) return 'promptImage: Required';
  for (const image of images) {
    if (typeof image.uri !== 'string' || !/^(https:|data:image\/(jpeg|png|webp);base64,)/.test(image.uri)) return 'promptImage: Invalid URI';
    if (image.uri.startsWith('data:') && image.uri.length > 5_000_000) return 'promptImage: Data URI exceeds 5MB';
    if (!['first', 'last'].includes(image.position)) return 'promptImage: Invalid position';
  }
  if (body.promptText !== undefined && (typeof body.promptText !== 'string' || body.promptText.length === 0 || body.promptText.length > 1000)) {
    return 'promptText: String must contain between 1 and 1000 character(s)';
  }
  if (typeof body.ratio !== 'string' || !/^\d+:\d+$/.test(body.ratio)) return 'ratio: Invalid enum value';
  if (body.duration !== undefined && (!Number.isInteger(body.duration) || body.duration < 2 || body.duration > 10)) return 'duration: Invalid duration';
  return undefined;
}

/** The task as `GET /v1/tasks/{id}` answers it in its current state. */
function taskJson(task: RunwayTask, baseUrl: string): Record<string, unknown> {
  const state = task.cancelled ? { status: 'CANCELLED' as const } : task.states[Math.min(task.polls, task.states.length) - 1];
  const common = { id: task.id, createdAt: new Date().toISOString() };
  switch (state.status) {
    case 'PENDING':
    case 'THROTTLED':
      return { ...common, status: state.status, estimatedCost: { credits: 25 } };
    case 'RUNNING':
      return { ...common, status: state.status, progress: state.progress, estimatedCost: { credits: 25 } };
    case 'SUCCEEDED':
      return { ...common, status: state.status, output: [`${baseUrl}/outputs/${task.id}.mp4?_jwt=signed`], cost: { credits: 25 } };
    case 'FAILED':
      return { ...common, status: state.status, failure: state.failure ?? 'The task failed', failureCode: state.failureCode, cost: { credits: 0 } };
    case 'CANCELLED':
      return { ...common, status: state.status, cost: { credits: 0 } };
  }
}

export async function startRunwayServer(options: { apiKey?: string } = {}): Promise<RunwayServer> {
  const apiKey = options.apiKey ?? RUNWAY_TEST_KEY;
  const tasks: RunwayTask[] = [];
  const scripted: TaskState[][] = [];
  const errors: Record<Route, ErrorAnswer[]> = { submit: [], poll: [], cancel: [], output: [] };

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url!, 'https://localhost');
    const taskPath = /^\/v1\/tasks\/([^/]+)$/.exec(url.pathname);
    const output = /^\/outputs\/([^/]+)\.mp4$/.exec(url.pathname);
    const route: Route | undefined = req.method === 'POST' && url.pathname === '/v1/image_to_video' ? 'submit'
      : taskPath && req.method === 'GET' ? 'poll'
        : taskPath && req.method === 'DELETE' ? 'cancel'
          : output && req.method === 'GET' ? 'output' : undefined;
    if (!route) return send(res, 404, { error: 'Not found' });
    if (route !== 'output') {
      if (req.headers.authorization !== `Bearer ${apiKey}`) return send(res, 401, { error: 'Invalid API key' });
      if (req.headers['x-runway-version'] !== RUNWAY_VERSION) return send(res, 400, { error: 'Invalid or missing X-Runway-Version header' });
    }
    const failure = errors[route].shift();
    if (failure === 'hang') return; // no answer: the caller's deadline must end it
    const lie = failure && 'lying' in failure ? failure.lying : undefined;
    if (failure && 'status' in failure) return send(res, failure.status, { error: failure.error ?? `Scripted HTTP ${failure.status}` });

    if (route === 'submit') {
      let body: Record<string, any>;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return send(res, 400, { error: 'Invalid JSON body' });
      }
      const problem = submitProblem(body);
      if (problem) return send(res, 400, { error: problem });
      const task: RunwayTask = { id: randomUUID(), body, states: scripted.shift() ?? DEFAULT_STATES, polls: 0, cancelled: false };
      tasks.push(task);
      return send(res, 200, { id: task.id, estimatedCost: { credits: 25 } });
    }
    const task = tasks.find((t) => t.id === (taskPath?.[1] ?? output?.[1]));
    if (!task) return send(res, 404, { error: 'Task not found' });
    if (route === 'poll') {
      task.polls++;
      return send(res, 200, taskJson(task, server.url));
    }
    if (route === 'cancel') {
      task.cancelled = true;
      return send(res, 204);
    }
    const state = task.states[task.states.length - 1];
    const bytes = (state.status === 'SUCCEEDED' && state.output) || await sampleMp4();
    if (lie) return sendLyingAnswer(res, { ...lie, body: bytes, contentType: 'video/mp4' });
    res.writeHead(200, { 'Content-Type': 'video/mp4', 'Content-Length': bytes.length }).end(bytes);
  };

  const server = await startHttpsServer(handle);
  return {
    url: server.url,
    apiKey,
    requests: server.requests,
    tasks,
    nextTask: (...states) => void scripted.push(states),
    failNext: (route, ...answers) => void errors[route].push(...answers),
    close: () => server.close(),
  };
}
