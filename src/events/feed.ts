/**
 * The account event feed: every change of an account's actions (v1) or jobs (v2) and each webhook delivery's outcome,
 * in the order of their transactions, paged by an opaque cursor (migration AccountEvents says how the order is kept
 * lossless). Kept 30 days; a cursor from before the purged part is refused with the oldest valid one.
 */
import type { DataSource } from 'typeorm';
import { AppError, ValidationFailed } from '../errors';
import { prepared, preparedRows } from '../db/prepared';

export type FeedVersion = 'v1' | 'v2';

/** How long the feed keeps an event (the housekeeping schedule purges older ones). */
export const FEED_RETENTION_DAYS = 30;
export const FEED_MAX_LIMIT = 500;
export const FEED_DEFAULT_LIMIT = 100;

/** A position in the feed: the writing transaction's id and the row's id. */
interface Position { xid: string; id: string }

const START: Position = { xid: '0', id: '0' };

export function encodeCursor(position: Position): string {
  return Buffer.from(`${position.xid}.${position.id}`).toString('base64url');
}

/** The position of a cursor this feed gave; a ValidationFailed (422) for anything else. */
export function decodeCursor(cursor: string): Position {
  // Decimal without leading zeros (Postgres would read `010` as octal), within xid8's and bigint's ranges.
  const match = /^(0|[1-9]\d{0,19})\.(0|[1-9]\d{0,18})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!match || encodeCursor({ xid: match[1], id: match[2] }) !== cursor || BigInt(match[1]) >= 2n ** 64n || BigInt(match[2]) >= 2n ** 63n) {
    throw new ValidationFailed([{ loc: ['query', 'after'], msg: 'is not a cursor this feed gave', type: 'format' }]);
  }
  return { xid: match[1], id: match[2] };
}

interface FeedRow {
  id: string; xid: string; kind: 'action' | 'job' | 'delivery'; action_id: number; seq: number | null; job_id: string | null; delivery_id: string | null;
  status: string; phase: string | null; webhook_event: string | null; created_at: Date;
}

/** A page's rows (none: one row of nulls) with, read in the same statement, where every later row will come and the horizon. */
type PageRow = Partial<FeedRow> & { bound: string; horizon_xid: string | null; horizon_id: string | null };

const KINDS: Record<FeedVersion, string> = {
  v1: `kind IN ('action', 'delivery')`,
  v2: `(kind = 'job' OR (kind = 'delivery' AND job_id IS NOT NULL))`,
};

/**
 * One statement, one snapshot: the page (only transactions older than every one still running: nothing can appear
 * later before what a reader passed), that bound, and the purge's horizon (a page never skips what a purge removed
 * meanwhile unnoticed).
 */
const pageStatement = (version: FeedVersion) => prepared(`account_events_page_${version}`, `
  WITH bound AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x),
  horizon AS MATERIALIZED (SELECT xid, event_id FROM account_events_horizon WHERE id = 1),
  page AS (
    SELECT e.id::text, e.xid::text, e.kind, e.action_id, e.seq, e.job_id, e.delivery_id, e.status, e.phase, e.webhook_event, e.created_at
      FROM account_events e
     WHERE e.account_id = $1 AND ${KINDS[version]} AND (e.xid, e.id) > ($2::xid8, $3::bigint)
       AND NOT EXISTS (SELECT 1 FROM horizon h WHERE (e.xid, e.id) <= (h.xid, h.event_id))
       AND e.xid < (SELECT x FROM bound)
     ORDER BY e.xid, e.id LIMIT $4)
  SELECT page.*, (SELECT x FROM bound)::text AS bound, (SELECT xid FROM horizon)::text AS horizon_xid, (SELECT event_id FROM horizon)::text AS horizon_id
    FROM (SELECT 1) one LEFT JOIN page ON true ORDER BY page.xid::xid8, page.id::bigint`);
const PAGES = { v1: pageStatement('v1'), v2: pageStatement('v2') };

/** One event as the feed answers it. */
export type FeedEvent = Record<string, unknown>;

function eventOf(version: FeedVersion, row: FeedRow): FeedEvent {
  const subject = version === 'v1' ? { action_id: row.action_id } : { job_id: row.job_id };
  const cursor = encodeCursor(row);
  const at = row.created_at.toISOString();
  if (row.kind === 'delivery') {
    return { cursor, type: `webhook.${row.status}`, ...subject, status: row.status, delivery_id: row.delivery_id, webhook_event: row.webhook_event, created_at: at };
  }
  return {
    cursor, type: `${version === 'v1' ? 'action' : 'job'}.${row.status}`, ...subject, status: row.status,
    ...(version === 'v2' ? { phase: row.phase } : { job_id: row.job_id }), seq: row.seq, created_at: at,
  };
}

/**
 * A page of the account's feed after `after` (from the oldest kept event without one): its events and the cursor to
 * go on from (the last event's; with none, where the next one can come, so that a poll never reads the same rows
 * again). A cursor from before the purged part answers 410 `cursor_expired` with `details.oldest_cursor`.
 */
export async function readFeed(db: DataSource, version: FeedVersion, accountId: number, after: string | undefined, limit: number): Promise<{ events: FeedEvent[]; next_cursor: string | null }> {
  const from = after === undefined ? START : decodeCursor(after);
  const rows = await preparedRows<PageRow>(db, PAGES[version], [accountId, from.xid, from.id, limit]);
  const { bound, horizon_xid: horizonXid, horizon_id: horizonId } = rows[0];
  const horizon = horizonXid !== null && horizonId !== null ? { xid: horizonXid, id: horizonId } : undefined;
  if (horizon && after !== undefined && before(from, horizon)) {
    throw new AppError(410, 'cursor_expired', `The feed keeps ${FEED_RETENTION_DAYS} days of events; this cursor is older: go on from details.oldest_cursor`,
      { oldest_cursor: encodeCursor(horizon) });
  }
  const page = rows.filter((row): row is PageRow & FeedRow => row.id !== null && row.id !== undefined);
  const last = page.at(-1);
  // Nothing new: every later event's transaction is at `bound` or above (it was running, or had not begun).
  const next = last ? encodeCursor(last) : encodeCursor(laterOf(from, { xid: bound, id: '0' }));
  return { events: page.map((row) => eventOf(version, row)), next_cursor: next };
}

/** The later of two positions. */
function laterOf(a: Position, b: Position): Position {
  return before(a, b) ? b : a;
}

/** Whether `a` comes before `b` in the feed's order. */
function before(a: Position, b: Position): boolean {
  const [ax, bx] = [BigInt(a.xid), BigInt(b.xid)];
  return ax < bx || (ax === bx && BigInt(a.id) < BigInt(b.id));
}

const PURGE_BATCH = 5000;

/**
 * Deletes the feed's events older than FEED_RETENTION_DAYS, as a prefix of its order: from the oldest, up to the
 * first event that is younger (so an event a few moments younger than the cut, written by an older transaction, may
 * go with them), and records the last position deleted. Answers how many were deleted.
 */
export async function purgeFeed(db: DataSource): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await db.transaction(async (m) => {
      const [gone]: { n: number; xid: string | null; id: string | null }[] = await m.query(`
        WITH young AS (
          SELECT xid, id FROM account_events WHERE created_at >= now() - make_interval(days => $1) ORDER BY xid, id LIMIT 1
        ), doomed AS (
          SELECT e.ctid FROM account_events e
           WHERE e.created_at < now() - make_interval(days => $1)
             AND NOT EXISTS (SELECT 1 FROM young y WHERE (e.xid, e.id) >= (y.xid, y.id))
           ORDER BY e.xid, e.id LIMIT ${PURGE_BATCH}
        ), gone AS (
          DELETE FROM account_events WHERE ctid IN (SELECT ctid FROM doomed) RETURNING xid, id
        ), last AS (
          SELECT xid, id FROM gone ORDER BY xid DESC, id DESC LIMIT 1
        )
        SELECT (SELECT count(*) FROM gone)::int AS n, (SELECT xid::text FROM last) AS xid, (SELECT id::text FROM last) AS id`, [FEED_RETENTION_DAYS]);
      if (gone.n > 0) {
        // The horizon only moves forward: a cursor before it may have missed deleted events.
        await m.query(`
          INSERT INTO account_events_horizon (id, xid, event_id) VALUES (1, $1::xid8, $2)
          ON CONFLICT (id) DO UPDATE SET xid = EXCLUDED.xid, event_id = EXCLUDED.event_id
           WHERE (account_events_horizon.xid, account_events_horizon.event_id) < (EXCLUDED.xid, EXCLUDED.event_id)`, [gone.xid, gone.id]);
      }
      return gone.n;
    });
    total += deleted;
    if (deleted < PURGE_BATCH) return total;
  }
}
