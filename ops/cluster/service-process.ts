/**
 * The service as a child process (`node dist/app/main.js <mode>`): one API or worker process of `npm run cluster`,
 * and the restart and crash tests' service.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { stopChild } from '../tools/tool-process';

const MAIN = path.resolve(__dirname, '../../app/main.js');

/**
 * What the npm scripts set before they run the service (package.json `start`, `start:api`, `start:worker`,
 * `start:batch-worker`; tested),
 * given to every process started here as well unless the environment sets it: glibc's malloc arenas (see
 * docs/configuration.md), so that the cluster, the benchmark and the fault suite run the service as `npm start` does.
 */
export const NPM_START_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/**
 * The V8 heap limits of a batch worker (package.json `start:batch-worker`, docs/operations.md; tested): semi-spaces
 * of 4 MiB instead of 16 in both of its isolates (the main thread's and the workflow thread's), and an old
 * generation of 512 MiB at most, under which V8 caps how far the old generation grows past what is alive before its
 * next full collection lower than under its default limit (a quarter of the machine's memory, up to 4 GiB). A batch
 * allocates steadily for as long as it drains: with the defaults each young generation grew to its largest and the
 * main thread's old generation swung far above what was alive, so the RSS rose 100 to 220 MiB over idle; with these
 * limits it rose 67-84, at 0.6-2.3 ms more CPU an item (bench/changes.md, issue 27). Never read from the environment
 * or the configuration: node flags such as `--require` run code.
 */
export const BATCH_WORKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--max-old-space-size=512'];

export type ServiceMode = 'all' | 'api' | 'worker';

export interface ServiceProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
  /** SIGTERM (the service drains), then SIGKILL if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const READY_TIMEOUT_MS = 120_000;

/**
 * Starts the service and resolves once it logs that every part of `mode` is up. Its log lines go to `logFile`
 * when given (kept for the whole life of the process), else they are read only until it is ready. `nice`: the
 * process runs at this CPU priority (`nice -n`, 19 the lowest), as docs/operations.md runs batch workers on a
 * machine they share with interactive work.
 */
export async function startServiceProcess(
  mode: ServiceMode, env: Record<string, string>, options: { logFile?: string; nice?: number; nodeFlags?: readonly string[] } = {},
): Promise<ServiceProcess> {
  const node = [process.execPath, ...(options.nodeFlags ?? []), MAIN, mode];
  const command = options.nice === undefined ? node : ['nice', '-n', String(options.nice), ...node];
  const child = spawn(command[0], command.slice(1), { env: { ...NPM_START_ENV, ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  if (options.logFile) {
    mkdirSync(path.dirname(options.logFile), { recursive: true });
    child.stderr!.pipe(createWriteStream(options.logFile, { flags: 'a' }));
  }
  const waitingFor = new Set(mode === 'all' ? ['API listening', 'worker running'] : mode === 'api' ? ['API listening'] : ['worker running']);
  const lines: string[] = [];
  const reader = readline.createInterface({ input: child.stderr! });
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    reader.on('line', (line) => {
      lines.push(line);
      try {
        waitingFor.delete(JSON.parse(line).msg);
      } catch {
        // not one of our JSON lines
      }
      if (waitingFor.size === 0) resolve();
    });
    void exited.then((code) => reject(new Error(`service exited with ${code} before it was ready:\n${lines.slice(-40).join('\n')}`)));
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service not ready within ${READY_TIMEOUT_MS} ms:\n${lines.slice(-40).join('\n')}`));
    }, READY_TIMEOUT_MS);
  }).finally(() => clearTimeout(timer));
  reader.removeAllListeners('line'); // the reader goes on draining the pipe, so the child never blocks on its log
  return {
    child,
    exited,
    async kill(signal) {
      child.kill(signal);
      return exited;
    },
    stop: (graceMs = 25_000) => stopChild(child, exited, graceMs),
  };
}
