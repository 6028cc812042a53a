/**
 * A program the project runs beside itself (the Temporal dev server or server, its Web UI, the S3 gateway): spawned
 * with its output appended to a log file, awaited until it answers, and stopped with SIGTERM, then SIGKILL.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { toolEnv } from './go-tools';

export interface ToolProcess {
  child: ChildProcess;
  /** SIGTERM, then SIGKILL after the grace time; resolves once it has exited. */
  stop(): Promise<void>;
}

export interface ToolProcessOptions {
  /** How it is named in errors ("the S3 gateway"). */
  name: string;
  binary: string;
  args: string[];
  /** Its own variables; it gets only these and the basic ones of `toolEnv`, never the service's secrets. */
  env?: Record<string, string | undefined>;
  logFile: string;
  /** Asked every `pollMs` until it answers true; the process is then ready. */
  answers: () => Promise<boolean>;
  readyTimeoutMs: number;
  pollMs?: number;
  stopGraceMs?: number;
}

/** Starts the program and resolves once it answers; if it exits first or never answers, it is stopped and this throws. */
export async function startToolProcess(options: ToolProcessOptions): Promise<ToolProcess> {
  mkdirSync(path.dirname(options.logFile), { recursive: true });
  const out = openSync(options.logFile, 'a');
  const child = spawn(options.binary, options.args, { stdio: ['ignore', out, out], env: toolEnv(options.env ?? {}) });
  closeSync(out); // the child has its own copy
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => child.once('exit', () => { exited = true; resolve(); }));
  const stop = () => stopChild(child, exitPromise, options.stopGraceMs ?? 10_000);
  const deadline = Date.now() + options.readyTimeoutMs;
  while (!(await options.answers())) {
    if (exited) throw new Error(`${options.name} exited at start; see ${options.logFile}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${options.name} did not answer within ${options.readyTimeoutMs / 1000} s; see ${options.logFile}`);
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 200));
  }
  return { child, stop };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited (at once if it already has). */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Whether `url` answers 2xx within a second: the readiness probe of a tool with an HTTP endpoint. */
export async function httpAnswers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}
