/**
 * How busy the service is with interactive work, as the batches' steps see it (docs/design.md, "Batches yield to
 * interactive work"): the interactive requests in flight plus the interactive jobs in progress.
 *
 * Requests: each API process measures the interactive requests it has in flight (the time their routes take, for
 * requests with an API key or a dashboard session, a batch's own routes left out: api/app.ts), averaged over each
 * half second (request-seconds a second: 50 clients polling without a pause make about 50, one client polling in a
 * loop at most 1), and writes it to `interactive_demand` while it is above nothing; the rows written in the last two
 * seconds count. Jobs: the live actions pending or processing that are no batch's items, each one a client waiting
 * for it, for its first two minutes (one stuck open longer holds no batch back), a thousand at most; a sandbox key's
 * jobs are free drills, no customer waiting on a result, so they do not count (a `slow` drill resubmitted would hold
 * every account's batches at a pace otherwise). A batch's step reads the sum and, at or above BATCH_YIELD_AT (1),
 * yields (batches/run.ts).
 *
 * The demand is of requests and jobs, not of CPU: a batch's own work (its worker, and what its items cost Temporal
 * and Postgres) does not count, so a batch that fills the machine alone does not slow itself down, and an
 * `all`-mode process, API and worker in one event loop, measures its API alone.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { log } from '../log';

/** How often an API process writes its demand, and how long a row counts after it was written. */
export const DEMAND_INTERVAL_MS = 500;
const FRESH_FOR = '2 seconds';
/** How long an interactive job counts after it was created, and how many are counted at most. */
const JOB_COUNTS_FOR = '2 minutes';
const MOST_JOBS = 1000;

/** The interactive requests of one process in flight, integrated over time. */
export class InteractiveDemandMeter {
  private inFlight = 0;
  private busyMs = 0;
  private since: number;
  private changedAt: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.since = this.changedAt = now();
  }

  /** A request begins; the function answered ends it (once). */
  begin(): () => void {
    this.move(+1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.move(-1);
    };
  }

  /** The average number of requests in flight since the last `take`, and a new interval begun. */
  take(): number {
    const now = this.now();
    this.busyMs += this.inFlight * (now - this.changedAt);
    const demand = now > this.since ? this.busyMs / (now - this.since) : this.inFlight;
    this.busyMs = 0;
    this.since = this.changedAt = now;
    return demand;
  }

  private move(by: number) {
    const now = this.now();
    this.busyMs += this.inFlight * (now - this.changedAt);
    this.changedAt = now;
    this.inFlight += by;
  }
}

/** Written as at most two decimals: a demand below this is none. */
const NONE = 0.01;
/** How often an API process removes the rows of processes gone for ten minutes (they count for two seconds only). */
const PRUNE_EVERY_MS = 60_000;
const UPSERT = `INSERT INTO interactive_demand (process, demand, at) VALUES ($1, $2, now())
  ON CONFLICT (process) DO UPDATE SET demand = excluded.demand, at = excluded.at`;
const PRUNE = `DELETE FROM interactive_demand WHERE at < now() - interval '10 minutes'`;

/**
 * Writes the meter's demand every DEMAND_INTERVAL_MS while there is some (and once more when it falls to none), as
 * this process's row; answers a function that stops and removes the row. A write that fails is logged and the next
 * one tried: batches then see less demand than there is, never an API that fails.
 */
export function publishInteractiveDemand(db: DataSource, meter: InteractiveDemandMeter, intervalMs = DEMAND_INTERVAL_MS): () => Promise<void> {
  const processId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let last = 0;
  let writing: Promise<unknown> | undefined;
  let warned = false;
  let pruned = Date.now();
  const timer = setInterval(() => {
    const demand = Math.round(meter.take() * 100) / 100;
    if (writing) return; // one write at a time: a write still waiting for the pool skips this tick
    const statements: [string, unknown[]][] = [];
    if (demand >= NONE || last >= NONE) statements.push([UPSERT, [processId, demand]]);
    if (Date.now() - pruned >= PRUNE_EVERY_MS) {
      pruned = Date.now();
      statements.push([PRUNE, []]);
    }
    if (statements.length === 0) return;
    writing = (async () => {
      for (const [sql, params] of statements) await db.query(sql, params);
      last = demand;
    })().then(() => { warned = false; }, (err: unknown) => {
      if (!warned) log.warn('writing the API\'s interactive demand failed; batches do not yield to it meanwhile', { error: String(err) });
      warned = true;
    }).finally(() => { writing = undefined; });
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await writing;
    await db.query(`DELETE FROM interactive_demand WHERE process = $1`, [processId]).catch(() => undefined);
  };
}

/** What a batch yields to: the interactive requests in flight on average, and the interactive jobs in progress. */
export interface InteractiveDemand { requests: number; jobs: number }

const NO_DEMAND: InteractiveDemand = { requests: 0, jobs: 0 };
export const demandOf = (d: InteractiveDemand) => d.requests + d.jobs;

let readWarned = false;

/**
 * The demand as `readInteractiveDemand` answers it, or none when it cannot be read (the table not there yet during
 * an upgrade, a statement timeout): batches then run as if nothing pressed, logged once, rather than stop.
 */
export async function interactiveDemandOrNone(m: EntityManager): Promise<InteractiveDemand> {
  try {
    const demand = await readInteractiveDemand(m);
    readWarned = false;
    return demand;
  } catch (err) {
    if (!readWarned) log.warn('the API\'s interactive demand could not be read; batches do not yield meanwhile', { error: String(err) });
    readWarned = true;
    return NO_DEMAND;
  }
}

/**
 * The interactive requests in flight on average across the API processes, as they wrote it in the last two seconds,
 * and the live interactive jobs in progress (through the partial index `actions_open`; a batch's item is one whose
 * action `batch_items` names, through `batch_items_action`; a sandbox account's is one whose account is `sandbox_of`
 * another).
 */
export async function readInteractiveDemand(m: EntityManager): Promise<InteractiveDemand> {
  const [row] = await m.query(
    `SELECT (SELECT COALESCE(sum(demand), 0) FROM interactive_demand WHERE at > now() - interval '${FRESH_FOR}')::float8 AS requests,
            (SELECT count(*) FROM (SELECT 1 FROM actions a
               WHERE a.status IN ('pending', 'processing') AND a.created_at > now() - interval '${JOB_COUNTS_FOR}'
                 AND NOT EXISTS (SELECT 1 FROM batch_items i WHERE i.action_id = a.id)
                 AND NOT EXISTS (SELECT 1 FROM accounts s WHERE s.id = a.account_id AND s.sandbox_of IS NOT NULL)
               LIMIT ${MOST_JOBS}) open)::int AS jobs`,
  ) as InteractiveDemand[];
  return row;
}
