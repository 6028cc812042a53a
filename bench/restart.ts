/**
 * `npm start` of an unchanged checkout, timed from the command to its first healthy answer (`GET /readyz` 200),
 * with Temporal already running: what a restart after a crash costs before the service answers again. The command
 * is the README's, build step included (an unchanged checkout compiles nothing).
 */
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../ops/dev-server';
import { stopChild } from '../ops/tools/tool-process';
import type { Figures } from './measured';
import { recordValue } from './measured';
import type { ServiceContext } from './service';
import { sleep } from './stats';

const ROOT = path.resolve(__dirname, '../..');

async function answersReady(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).status === 200;
  } catch {
    return false;
  }
}

export async function measureRestart(ctx: ServiceContext, figures: Figures, runs: number): Promise<void> {
  for (let i = 0; i < runs; i++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const t = performance.now();
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      stdio: 'ignore',
      detached: true, // its own process group: npm, its shell and the service are stopped together
      env: {
        ...process.env, ...ctx.env, DATABASE_URL: ctx.databaseUrl, TEMPORAL_ADDRESS: ctx.temporalAddress, TEMPORAL_TASK_QUEUE: 'bench-restart',
        PORT: String(port), PUBLIC_BASE_URL: url, DATA_DIR: path.join(ctx.dataDir, 'restart'),
      },
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const deadline = Date.now() + 120_000;
      while (!(await answersReady(url))) {
        if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode} before it was healthy`);
        if (Date.now() > deadline) throw new Error('npm start was not healthy within 120 s');
        await sleep(25);
      }
      recordValue(figures, 'start.healthy', performance.now() - t);
    } finally {
      const group = { kill: (signal: NodeJS.Signals) => process.kill(-child.pid!, signal), get exitCode() { return child.exitCode; }, get signalCode() { return child.signalCode; } };
      await stopChild(group as unknown as ChildProcess, exited, 20_000);
    }
  }
}
