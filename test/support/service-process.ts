/** The real service as a child process (`node dist/src/main.js <mode>`), for restart and crash tests. */
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';

const MAIN = path.resolve(__dirname, '../../src/main.js');

export interface ServiceProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** Starts the service and resolves once it logs that every part of `mode` is up. */
export async function startServiceProcess(mode: 'all' | 'api' | 'worker', env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [MAIN, mode], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitingFor = new Set(mode === 'all' ? ['API listening', 'worker running'] : mode === 'api' ? ['API listening'] : ['worker running']);
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const reader = readline.createInterface({ input: child.stderr! });
    reader.on('line', (line) => {
      lines.push(line);
      try {
        waitingFor.delete(JSON.parse(line).msg);
      } catch {
        // not one of our JSON lines
      }
      if (waitingFor.size === 0) resolve();
    });
    void exited.then((code) => reject(new Error(`service exited with ${code} before it was ready:\n${lines.join('\n')}`)));
  });
  return {
    child,
    exited,
    async kill(signal) {
      child.kill(signal);
      return exited;
    },
  };
}
