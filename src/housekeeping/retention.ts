/**
 * How long the records nobody needs any more are kept, and the statements that drop them. The housekeeping
 * workflow (workflows/housekeeping.ts) runs them on a Temporal schedule; each is safe to run anywhere, any number
 * of times, and deletes in batches so that no statement holds many rows' locks for long.
 */
import type { DataSource } from 'typeorm';
import { purgeFeed } from '../events/feed';

/** A repeat of an `Idempotency-Key` within this window gets the first answer. */
export const IDEMPOTENCY_WINDOW_SECONDS = 300;
/** Requests are counted against the rate limit per key in windows of this length. */
export const RATE_LIMIT_WINDOW_SECONDS = 60;

export const RETENTION = {
  /** An `Idempotency-Key` answer, past its window: twice the window, so a repeat at its very end still finds it. */
  idempotencyKeySeconds: IDEMPOTENCY_WINDOW_SECONDS * 2,
  /** A finished (succeeded, failed or skipped) webhook delivery, shown by the deliveries list until then. */
  finishedDeliveryDays: 30,
  /** A dashboard session that ended (signed out, expired, idle), and a one-time link used or expired, after this. */
  endedSessionDays: 30,
} as const;

const BATCH = 5000;

/** Deletes in batches of BATCH until fewer are left; `select` names the rows' ids (`id`) to delete, oldest first. */
async function deleteInBatches(db: DataSource, table: string, select: string, params: unknown[]): Promise<number> {
  let total = 0;
  for (;;) {
    const [, deleted] = await db.query(`DELETE FROM ${table} WHERE ctid IN (${select} LIMIT ${BATCH})`, params);
    total += deleted;
    if (deleted < BATCH) return total;
  }
}

export interface PurgedRecords {
  idempotencyKeys: number; rateLimitWindows: number; deliveries: number;
  /** Dashboard sessions and one-time links ended or spent 30 days ago, and password-attempt windows that ended. */
  sessions: number; links: number; passwordAttempts: number;
  /** Events of the account feed older than its 30 days (src/events/feed.ts). */
  feedEvents: number;
}

/** Windows of counted password attempts (src/users/password-attempts.ts). */
export const PASSWORD_ATTEMPT_WINDOW_SECONDS = 15 * 60;

export async function purgeExpiredRecords(db: DataSource): Promise<PurgedRecords> {
  const idempotencyKeys = await deleteInBatches(db, 'idempotency_keys',
    'SELECT ctid FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)', [RETENTION.idempotencyKeySeconds]);
  const rateLimitWindows = await deleteInBatches(db, 'rate_limit_windows',
    // A window is worth nothing once the next one has begun (a key's next request drops its own old ones too); one
    // more is kept, since the windows come from the API hosts' clocks and this from the database's.
    'SELECT ctid FROM rate_limit_windows WHERE window_start < floor(extract(epoch FROM now()) / $1) - 2', [RATE_LIMIT_WINDOW_SECONDS]);
  const deliveries = await deleteInBatches(db, 'webhook_deliveries',
    `SELECT ctid FROM webhook_deliveries WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1)`, [RETENTION.finishedDeliveryDays]);
  const sessions = await deleteInBatches(db, 'user_sessions',
    'SELECT ctid FROM user_sessions WHERE coalesce(ended_at, expires_at) < now() - make_interval(days => $1)', [RETENTION.endedSessionDays]);
  const links = await deleteInBatches(db, 'user_links',
    'SELECT ctid FROM user_links WHERE coalesce(used_at, expires_at) < now() - make_interval(days => $1)', [RETENTION.endedSessionDays]);
  const passwordAttempts = await deleteInBatches(db, 'password_attempts',
    'SELECT ctid FROM password_attempts WHERE window_start < floor(extract(epoch FROM now()) / $1)', [PASSWORD_ATTEMPT_WINDOW_SECONDS]);
  const feedEvents = await purgeFeed(db);
  return { idempotencyKeys, rateLimitWindows, deliveries, sessions, links, passwordAttempts, feedEvents };
}
