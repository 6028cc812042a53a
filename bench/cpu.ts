/**
 * Where the CPU goes during a load: every process of the machine read from Linux `/proc` before and after, grouped
 * by what it is (the service process, the Temporal backend with its own Postgres backends, the service's Postgres
 * backends, Postgres's shared processes, this harness generating the load, everything else), plus the machine's
 * busy cores from `/proc/stat`. The harness divides by the operations the load completed: CPU milliseconds per
 * operation, for the service and for its floor in the same run, which is what says how far the targets can go on
 * this machine.
 */
import { readdirSync, readFileSync } from 'node:fs';

export const CPU_GROUPS = ['service', 'temporal', 'postgres', 'postgresShared', 'harness', 'other'] as const;
export type CpuGroup = typeof CPU_GROUPS[number];

export const CPU_GROUP_LABELS: Record<CpuGroup, string> = {
  service: 'service process',
  temporal: 'Temporal (server or dev server, with its Postgres backends)',
  postgres: 'service Postgres backends',
  postgresShared: 'Postgres shared (WAL writer, checkpointer, ...)',
  harness: 'harness (load generator)',
  other: 'other processes (noise, not in the total)',
};

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** What identifies the processes of a measurement. */
export interface CpuSubjects {
  /** The service's process ids (an API process, or the `all` process). */
  servicePids: number[];
  /** The service's database: Postgres backends on it count as `postgres`. */
  serviceDatabase: string;
  /**
   * The measured load is a floor that uses no database, taken while the service waits idle beside it (in turn with
   * it): the service database's backends then count as `other`, out of the total, as the idle service processes do.
   */
  serviceDatabaseIdle?: boolean;
}


/** The subjects of a load: these process ids count as the service, the backends of this database URL's database as its Postgres. */
export function subjectsOf(servicePids: number[], databaseUrl: string, options: { databaseIdle?: boolean } = {}): CpuSubjects {
  return { servicePids, serviceDatabase: new URL(databaseUrl).pathname.slice(1), ...(options.databaseIdle ? { serviceDatabaseIdle: true } : {}) };
}
function processSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime + stime, all threads
  } catch {
    return undefined; // gone
  }
}

function classify(pid: number, subjects: CpuSubjects): CpuGroup {
  if (pid === process.pid) return 'harness';
  if (subjects.servicePids.includes(pid)) return 'service';
  let cmdline = '';
  let comm = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return 'other';
  }
  if (comm.startsWith('temporal')) return 'temporal';
  if (comm === 'postgres' || cmdline.startsWith('postgres')) {
    // A backend's title names its database: "postgres: 15/main: user database host(port) state".
    if (/ temporal\w* /.test(cmdline)) return 'temporal';
    if (cmdline.includes(` ${subjects.serviceDatabase} `)) return subjects.serviceDatabaseIdle ? 'other' : 'postgres';
    return 'postgresShared';
  }
  return 'other';
}

/** The machine's busy and total CPU seconds so far (all cores) and its core count, from one read of /proc/stat. */
function machineTicks(): { busy: number; total: number; cores: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const cpu = lines[0].trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = cpu[3] + (cpu[4] ?? 0); // idle + iowait
  return { busy: (total - idle) / TICKS, total: total / TICKS, cores: lines.filter((line) => /^cpu\d+ /.test(line)).length || 1 };
}

/** CPU seconds of every process now. */
function processTimes(): Map<number, number> {
  const times = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const seconds = processSeconds(Number(entry));
    if (seconds !== undefined) times.set(Number(entry), seconds);
  }
  return times;
}

export interface CpuUse {
  /** CPU seconds per group over the load (a process that started during it counts from zero). */
  seconds: Record<CpuGroup, number>;
  /** Cores busy on average over the load, all processes. */
  busyCores: number;
}

/** Runs `load` and answers what each group of processes spent on it (each process classified once, at the end). */
export async function measureCpu<T>(subjects: CpuSubjects, load: () => Promise<T>): Promise<{ result: T; cpu: CpuUse }> {
  const [before, machineBefore] = [processTimes(), machineTicks()];
  const result = await load();
  const [after, machineAfter] = [processTimes(), machineTicks()];
  const seconds = Object.fromEntries(CPU_GROUPS.map((g) => [g, 0])) as Record<CpuGroup, number>;
  for (const [pid, now] of after) seconds[classify(pid, subjects)] += now - (before.get(pid) ?? 0);
  const wallSeconds = (machineAfter.total - machineBefore.total) / machineAfter.cores;
  return { result, cpu: { seconds, busyCores: wallSeconds > 0 ? (machineAfter.busy - machineBefore.busy) / wallSeconds : 0 } };
}

/**
 * Waits until the machine is quiet: under `maxBusyCores` busy over one second (what a process stopped just before
 * left behind, e.g. the Temporal backend timing out its workflow tasks, is done), for at most `timeoutMs`; answers
 * the busy cores of the last second read.
 */
export async function machineQuiet(maxBusyCores = 0.2, timeoutMs = 60_000): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const before = machineTicks();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = machineTicks();
    const wall = (after.total - before.total) / after.cores;
    const busy = wall > 0 ? (after.busy - before.busy) / wall : 0;
    if (busy <= maxBusyCores || Date.now() >= end) return busy;
  }
}
