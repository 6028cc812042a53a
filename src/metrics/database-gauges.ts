/**
 * Gauges of the read models, computed on scrape from Postgres (served by API processes): open actions by status
 * with the age of the oldest (jobs stuck in `processing`), and open spark holds with the age of the oldest (holds
 * open longer than an hour), and how full Postgres's NOTIFY queue is (live progress announces every event there at
 * commit: a listener that stops reading fills it, and at 100% every notifying commit fails). Reads over partial
 * indexes of open rows only (actions_open, spark_holds_open), cached for CACHE_MS so that several scrapers or a fast scrape interval cost the database the same.
 */
import { Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { log } from '../log';
import { registry } from './registry';

const CACHE_MS = 10_000;
const OPEN_STATUSES = ['pending', 'processing'] as const;

interface Snapshot {
  actions: Record<string, { count: number; oldestSeconds: number }>;
  holds: { count: number; sparks: number; overAnHour: number; oldestSeconds: number };
  /** `pg_notification_queue_usage()`: 0 to 1. */
  notifyQueueUsage: number;
}

let source: DataSource | undefined;
let cached: { at: number; snapshot: Promise<Snapshot> } | undefined;

async function read(db: DataSource): Promise<Snapshot> {
  const [actionRows, [holds], [queue]] = await Promise.all([
    db.query(`SELECT status, count(*)::int AS count,
                     COALESCE(EXTRACT(EPOCH FROM now() - min(COALESCE(started_at, created_at))), 0)::float8 AS oldest
                FROM actions WHERE status IN ('pending', 'processing') GROUP BY status`),
    db.query(`SELECT count(*)::int AS count, COALESCE(sum(amount), 0)::int AS sparks,
                     (count(*) FILTER (WHERE created_at < now() - interval '1 hour'))::int AS over_an_hour,
                     COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest
                FROM spark_holds WHERE status = 'held'`),
    db.query('SELECT pg_notification_queue_usage()::float8 AS usage'),
  ]);
  const actions: Snapshot['actions'] = {};
  for (const status of OPEN_STATUSES) actions[status] = { count: 0, oldestSeconds: 0 };
  for (const row of actionRows) actions[row.status] = { count: row.count, oldestSeconds: row.oldest };
  return {
    actions, holds: { count: holds.count, sparks: holds.sparks, overAnHour: holds.over_an_hour, oldestSeconds: holds.oldest },
    notifyQueueUsage: queue.usage,
  };
}

/** The snapshot of the last CACHE_MS, read once for all gauges of a scrape; a failed read is not cached. */
function snapshot(): Promise<Snapshot> | undefined {
  if (!source) return undefined;
  if (!cached || Date.now() - cached.at > CACHE_MS) {
    const reading = read(source);
    cached = { at: Date.now(), snapshot: reading };
    reading.catch((err) => {
      if (cached?.snapshot === reading) cached = undefined;
      log.warn('the metrics read of open actions and holds failed', { error: String(err) });
    });
  }
  return cached.snapshot;
}

function gauge(name: string, help: string, labelNames: string[], set: (g: Gauge, s: Snapshot) => void): void {
  new Gauge({
    name, help, labelNames, registers: [registry],
    async collect() {
      const reading = snapshot();
      if (!reading) return;
      try {
        set(this, await reading);
      } catch {
        this.reset(); // no value rather than a stale one; the failure is logged once by snapshot()
      }
    },
  });
}

let registered = false;

/** Serves the gauges from `db` (the latest call's data source, for a process that reopens it). */
export function registerDatabaseGauges(db: DataSource): void {
  source = db;
  cached = undefined;
  if (registered) return;
  registered = true;
  gauge('imagery_open_actions', 'Actions pending or processing now, by status', ['status'], (g, s) => {
    for (const [status, v] of Object.entries(s.actions)) g.set({ status }, v.count);
  });
  gauge('imagery_oldest_open_action_age_seconds', 'Age of the oldest open action by status (since it started processing, or since it was created when pending); 0 when none', ['status'], (g, s) => {
    for (const [status, v] of Object.entries(s.actions)) g.set({ status }, v.oldestSeconds);
  });
  gauge('imagery_open_holds', 'Spark holds open now (neither charged nor released)', [], (g, s) => g.set(s.holds.count));
  gauge('imagery_open_holds_sparks', 'Sparks in open holds now', [], (g, s) => g.set(s.holds.sparks));
  gauge('imagery_open_holds_over_an_hour', 'Spark holds open for longer than an hour', [], (g, s) => g.set(s.holds.overAnHour));
  gauge('imagery_oldest_open_hold_age_seconds', 'Age of the oldest open spark hold; 0 when none', [], (g, s) => g.set(s.holds.oldestSeconds));
  gauge('imagery_postgres_notify_queue_usage_ratio', 'How full Postgres\'s NOTIFY queue is (0 to 1); at 1 every commit that announces live progress fails', [],
    (g, s) => g.set(s.notifyQueueUsage));
}
