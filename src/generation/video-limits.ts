/**
 * The check of a provider's video before it is stored, the counterpart of `usableImage`: ffmpeg reads the MP4's
 * header and decodes every frame of its video once, each frame's size capped before it is decoded, the whole in
 * one child process with a deadline, on one thread, in bounded memory.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resolveFfmpeg } from '../media/ffmpeg';

/** The most pixels of a video frame: 4K UHD (3840x2160). The decoder refuses a larger frame before decoding it. */
export const MAX_VIDEO_PIXELS = 3840 * 2160;

/** The longest video: a minute (the service's videos are 5 or 10 s). No more than this much is ever decoded. */
export const MAX_VIDEO_SECONDS = 60;

/**
 * How long the check may take. A Runway clip (10 s at 1280x768) decodes in about a second on one thread; the
 * limit stops a video built to be slow, and a stuck process.
 */
export const VIDEO_CHECK_TIMEOUT_MS = 30_000;

/** A video the service will not store; the message follows the video's name (`is not an MP4 ...`). */
export class VideoRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VideoRefused';
  }
}

/** The check could not finish (too slow, ffmpeg missing): nothing is known about the video. */
export class VideoCheckFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VideoCheckFailed';
  }
}

export interface VideoFacts {
  codec: string;
  width: number;
  height: number;
  durationSec: number;
}

export interface VideoCheckOptions {
  ffmpegPath?: string;
  timeoutMs?: number;
  /** The caller's cancellation: ffmpeg is killed and the reason thrown. */
  signal?: AbortSignal;
}

/** What ffmpeg wrote to stderr, bounded: its head (the header it read) and its tail (the error it stopped on). */
const STDERR_HEAD = 16 * 1024;
const STDERR_TAIL = 4 * 1024;

interface FfmpegRun { code: number | null; head: string; tail: string; timedOut: boolean }

function runFfmpeg(ffmpeg: string, args: string[], timeoutMs: number, signal?: AbortSignal): Promise<FfmpegRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let head = '';
    let tail = '';
    let timedOut = false;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (head.length < STDERR_HEAD) head += chunk.slice(0, STDERR_HEAD - head.length);
      tail = (tail + chunk).slice(-STDERR_TAIL);
    });
    const kill = () => child.kill('SIGKILL');
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    signal?.addEventListener('abort', kill, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', kill);
    };
    child.on('error', (err) => {
      done();
      reject(new VideoCheckFailed(`ffmpeg could not start: ${err.message}`));
    });
    child.on('close', (code) => {
      done();
      resolve({ code, head, tail, timedOut });
    });
  });
}

/** The header ffmpeg printed for the input (before its output and stream mapping), read for what the check needs. */
function headerFacts(head: string): Partial<VideoFacts> & { container?: string } {
  const input = head.split(/^(?:Stream mapping:|Output #0)/m)[0];
  const container = /^Input #0, ([^\s]+), from/m.exec(input)?.[1];
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(input);
  const video = /Stream #0:\d+\S*: Video: (\w+).*?, (\d+)x(\d+)/.exec(input);
  return {
    container,
    durationSec: duration ? Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]) : undefined,
    codec: video?.[1],
    width: video ? Number(video[2]) : undefined,
    height: video ? Number(video[3]) : undefined,
  };
}

/**
 * Checks that the bytes are an MP4 whose first video stream decodes, every frame, within the caps. Throws
 * VideoRefused for a video the service will not store, VideoCheckFailed when the check itself could not finish,
 * and the signal's reason when cancelled.
 */
export async function usableVideo(bytes: Buffer, options: VideoCheckOptions = {}): Promise<VideoFacts> {
  const timeoutMs = options.timeoutMs ?? VIDEO_CHECK_TIMEOUT_MS;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'imagery-video-check-'));
  try {
    const file = path.join(dir, 'video.mp4'); // a file, not a pipe: an MP4's index may be at its end
    await writeFile(file, bytes);
    const run = await runFfmpeg(resolveFfmpeg(options.ffmpegPath), [
      '-hide_banner', '-nostdin', '-nostats', '-xerror',
      '-max_pixels', String(MAX_VIDEO_PIXELS), '-threads', '1', '-i', file,
      '-map', '0:v:0', '-t', String(MAX_VIDEO_SECONDS + 1), '-f', 'null', '-',
    ], timeoutMs, options.signal);
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
    if (run.timedOut) throw new VideoCheckFailed(`the check of the video did not finish within ${timeoutMs} ms`);
    const facts = headerFacts(run.head);
    const reason = run.tail.trim().split('\n').filter(Boolean).slice(-2).join(' ').replaceAll(file, 'the video');
    if (!facts.container?.split(',').includes('mp4')) throw new VideoRefused(`is not an MP4 video ffmpeg can read (${reason})`);
    if (!facts.codec || !facts.width || !facts.height) throw new VideoRefused('has no video stream');
    if (facts.width * facts.height > MAX_VIDEO_PIXELS) {
      throw new VideoRefused(`is ${facts.width}x${facts.height} pixels a frame; the limit is ${MAX_VIDEO_PIXELS} pixels`);
    }
    if (run.code !== 0) throw new VideoRefused(`cannot be decoded (${reason})`);
    if (!facts.durationSec || facts.durationSec > MAX_VIDEO_SECONDS) {
      throw new VideoRefused(`lasts ${facts.durationSec ?? 'an unknown time'} s; the limit is ${MAX_VIDEO_SECONDS} s`);
    }
    if (/Output file is empty/.test(run.tail)) throw new VideoRefused('has no frame');
    return { codec: facts.codec, width: facts.width, height: facts.height, durationSec: facts.durationSec };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
