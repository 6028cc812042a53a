/**
 * HEIC to JPEG off the event loop. heic-convert decodes HEVC in WebAssembly and encodes JPEG in plain JavaScript:
 * seconds of CPU for a large photo, which on the main thread would stall every request (and, under `npm start`,
 * the worker's heartbeats, so running renders would time out). Conversions take turns on one worker thread,
 * which is unref'd so that it never keeps the process alive, and replaced if it dies.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { log } from '../src/log';

let thread: Worker | undefined;
let queue: Promise<unknown> = Promise.resolve();

function converterThread(): Worker {
  if (!thread) {
    const started = new Worker(path.join(__dirname, 'heic-converter-thread.js'));
    started.unref();
    // A conversion in flight gets the error too; this listener keeps an idle thread's failure from crashing
    // the process.
    started.on('error', (err) => log.warn('HEIC converter thread failed', { error: err.message }));
    started.once('exit', () => {
      if (thread === started) thread = undefined;
    });
    thread = started;
  }
  return thread;
}

function convertOnThread(heic: Buffer): Promise<Buffer> {
  const worker = converterThread();
  return new Promise<Buffer>((resolve, reject) => {
    const done = () => worker.off('message', onReply).off('error', onError).off('exit', onExit);
    const onReply = (reply: { jpeg?: Uint8Array; error?: string }) => {
      done();
      if (reply.jpeg) resolve(Buffer.from(reply.jpeg));
      else reject(new Error(reply.error));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onExit = (code: number) => {
      done();
      reject(new Error(`the HEIC converter stopped (exit code ${code})`));
    };
    worker.on('message', onReply).on('error', onError).on('exit', onExit);
    worker.postMessage(heic);
  });
}

/** Converts one HEIC image to JPEG, after the conversions asked for before it. */
export function heicToJpeg(heic: Buffer): Promise<Buffer> {
  const turn = queue.then(() => convertOnThread(heic));
  queue = turn.catch(() => undefined);
  return turn;
}
