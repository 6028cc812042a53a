/**
 * A Postgres server of the fault suite's own (the machine's binaries, a throwaway data folder, a free port), so that
 * a scenario can stop and start the service's database without touching anything else. As root, its commands run
 * as the `postgres` user (Postgres refuses to run as root).
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../ops/dev-server';

export interface OwnPostgres {
  /** The URL of database `name` on it. */
  url(name: string): string;
  stop(): void;
  start(): void;
  destroy(): void;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  return path.join(root, version, 'bin');
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'imagery-faults-pg-'));
  const bin = binDir();
  const port = await freePort();
  const data = path.join(dir, 'pgdata');
  mkdirSync(data, { recursive: true });
  const asRoot = os.userInfo().uid === 0;
  if (asRoot) {
    const { uid, gid } = { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
    chownSync(dir, uid, gid);
    chownSync(data, uid, gid);
  }
  const run = (tool: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]] : [path.join(bin, tool), args];
    execFileSync(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  };
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const start = () => run('pg_ctl', ['-D', data, '-l', path.join(dir, 'postgres.log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  const stop = () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  return {
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    stop,
    start,
    destroy: () => {
      try {
        stop();
      } catch {
        // already stopped
      }
    },
  };
}
