/**
 * HEIC to JPEG off the event loop. heic-convert decodes HEVC in WebAssembly and encodes JPEG in plain JavaScript:
 * seconds of CPU for a large photo, which on the main thread would stall every request (and, under `npm start`,
 * the worker's heartbeats, so running renders would time out). Conversions take turns on one worker thread,
 * which is unref'd so that it never keeps the process alive, and replaced if it dies.
 *
 * The thread is shared by every key, so its use is bounded: a full queue refuses at once (before any work), a
 * conversion that runs too long has its thread terminated, and a thread that converted a large image is replaced,
 * because WebAssembly memory never shrinks while its thread lives (a 7040x7040 image leaves ~600 MB behind).
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { log } from '../log';

export interface HeicConverterLimits {
  /** Conversions accepted at once, the running one included; one more is refused with HeicConverterBusy. */
  maxPending: number;
  /** How long one conversion may run on the thread (its wait in the queue not counted). */
  timeoutMs: number;
  /** A conversion of more pixels than this retires the thread afterwards, returning its memory. */
  recycleAbovePixels: number;
}

/**
 * Four requests converting at once (a request converts its images one after another); a conversion of a
 * 25-megapixel HEIC takes about 1.5 s of CPU, so the 15 s timeout is ten times that, and a thread is kept only
 * after conversions of up to 4 megapixels (it then holds about 150 MB; a fresh thread costs about 0.2 s).
 */
export const HEIC_CONVERTER_LIMITS: HeicConverterLimits = { maxPending: 4, timeoutMs: 15_000, recycleAbovePixels: 4_000_000 };

/**
 * The thread's JavaScript heap (the JPEG encoder's): 32 MB was enough for a 50-megapixel image, so twice that
 * stops a runaway encoder early. WebAssembly memory is outside this limit, hence the recycling.
 */
const THREAD_RESOURCE_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 };

/** Refused before any work: the queue is full. */
export class HeicConverterBusy extends Error {
  constructor(pending: number) {
    super(`the HEIC converter already has ${pending} conversions queued`);
    this.name = 'HeicConverterBusy';
  }
}

/** The conversion ran past the timeout; its thread was terminated. */
export class HeicConversionTimedOut extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the HEIC conversion took longer than ${timeoutMs / 1000} s`);
    this.name = 'HeicConversionTimedOut';
  }
}

export class HeicConverter {
  private thread: Worker | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private pending = 0;
  private threadsStarted = 0;

  constructor(readonly limits: HeicConverterLimits) {}

  /** Conversions accepted and not finished yet, the running one included. */
  get pendingConversions(): number {
    return this.pending;
  }

  /** How many threads this converter has started (a new one after a recycle, a timeout or a crash). */
  get threadCount(): number {
    return this.threadsStarted;
  }

  /**
   * Converts one HEIC image of `pixels` pixels to JPEG, after the conversions asked for before it; rejects at once
   * with HeicConverterBusy when `maxPending` are already accepted.
   */
  convert(heic: Buffer, pixels: number): Promise<Buffer> {
    if (this.pending >= this.limits.maxPending) return Promise.reject(new HeicConverterBusy(this.pending));
    this.pending++;
    const turn = this.queue.then(() => this.convertOnThread(heic, pixels)).finally(() => {
      this.pending--;
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private converterThread(): Worker {
    if (!this.thread) {
      const started = new Worker(path.join(__dirname, 'heic-converter-thread.js'), { resourceLimits: THREAD_RESOURCE_LIMITS });
      this.threadsStarted++;
      started.unref();
      // A conversion in flight gets the error too; this listener keeps an idle thread's failure from crashing
      // the process.
      started.on('error', (err) => log.warn('HEIC converter thread failed', { error: err.message }));
      started.once('exit', () => {
        if (this.thread === started) this.thread = undefined;
      });
      this.thread = started;
    }
    return this.thread;
  }

  /** Forgets the thread (the next conversion starts a new one) and ends it, which frees its memory. */
  private retire(worker: Worker): void {
    if (this.thread === worker) this.thread = undefined;
    void worker.terminate();
  }

  private convertOnThread(heic: Buffer, pixels: number): Promise<Buffer> {
    const worker = this.converterThread();
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        done();
        this.retire(worker);
        reject(new HeicConversionTimedOut(this.limits.timeoutMs));
      }, this.limits.timeoutMs).unref();
      const done = () => {
        clearTimeout(timer);
        worker.off('message', onReply).off('error', onError).off('exit', onExit);
      };
      const onReply = (reply: { jpeg?: Uint8Array; error?: string }) => {
        done();
        if (pixels > this.limits.recycleAbovePixels) this.retire(worker);
        if (reply.jpeg) resolve(Buffer.from(reply.jpeg.buffer, reply.jpeg.byteOffset, reply.jpeg.byteLength));
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
}

/** The process's one converter, shared by every request. */
export const heicConverter = new HeicConverter(HEIC_CONVERTER_LIMITS);

/** Converts one HEIC image of `pixels` pixels to JPEG on the process's converter. */
export function heicToJpeg(heic: Buffer, pixels: number): Promise<Buffer> {
  return heicConverter.convert(heic, pixels);
}
