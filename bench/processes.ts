/**
 * Everything the benchmark starts is registered here and stopped by `stopAll`, in reverse order, also when a
 * measurement fails or the run is interrupted (SIGINT, SIGTERM).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { stopChild } from '../ops/tools/tool-process';

type Stopper = { name: string; stop(): Promise<void> };
const running: Stopper[] = [];

/** Registers something to stop; returns a function that stops it now (and forgets it). */
export function track(name: string, stop: () => Promise<void>): () => Promise<void> {
  const entry: Stopper = { name, stop };
  running.push(entry);
  return async () => {
    const index = running.indexOf(entry);
    if (index < 0) return;
    running.splice(index, 1);
    await stop();
  };
}

export async function stopAll(): Promise<void> {
  while (running.length > 0) {
    const entry = running.pop()!;
    await entry.stop().catch((err) => process.stderr.write(`bench: stopping ${entry.name} failed: ${err}\n`));
  }
}

/** Resident set size of a process, in MiB (Linux `/proc`). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1]);
  if (!Number.isFinite(kib)) throw new Error(`no VmRSS for process ${pid}`);
  return kib / 1024;
}

export interface BenchChild {
  pid: number;
  stop(): Promise<void>;
}

/**
 * Runs one of the benchmark's own scripts (`floor-server.js`, `floor-worker.js`) as a child process, its output in
 * `logFile`, and resolves once it prints `ready`. Registered for cleanup.
 */
export async function startBenchChild(script: string, args: string[], logFile: string, timeoutMs = 60_000): Promise<BenchChild> {
  mkdirSync(path.dirname(logFile), { recursive: true });
  const child = spawn(process.execPath, [path.join(__dirname, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logFile, { flags: 'a' });
  child.stderr!.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = track(script, () => stopChild(child, exited, 10_000));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${script} not ready within ${timeoutMs} ms; see ${logFile}`)), timeoutMs);
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.trim() === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${script} exited before it was ready; see ${logFile}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: child.pid!, stop };
}
