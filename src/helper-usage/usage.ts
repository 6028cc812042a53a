/**
 * The AI helpers' day count and its price. Per account and UTC day, calls 1-100 are free and each started block of
 * 20 calls after them costs 1 spark: call 101 opens block 1 and pays for calls 101-120, call 121 opens block 2.
 *
 * A call is reserved before the provider writes and finished after it, each in its own short transaction, so no
 * lock is held while the provider works. The day's row counts the succeeded calls (`used`) and the calls in flight
 * (`pending`), and the money always stands at
 *   charged blocks = paidBlocks(used)                              (a block is paid once a call in it succeeded)
 *   held blocks    = paidBlocks(used + pending) - paidBlocks(used)  (blocks only calls in flight need)
 * Every step moves one count by one under the day's row lock, so it moves at most one block: a reservation that
 * needs a new block holds its spark (or is refused), a success charges the block it completes into, a failure
 * releases the block no call needs any more. Each reservation is a row, deleted by whoever finishes (or expires)
 * it, so it is finished exactly once.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { sqlRow, sqlRows } from '../db/sql';
import { holdSparksUnder, InsufficientSparks, Settlement, settleHoldUnder, transactionWithHolds } from '../billing/sparks';

export const FREE_HELPER_CALLS = 100;
export const HELPER_CALLS_PER_SPARK = 20;
export const HELPER_PAID_RATE =
  `1 spark per started block of ${HELPER_CALLS_PER_SPARK} calls after the first ${FREE_HELPER_CALLS} calls of the day (UTC)`;

/** How old a reservation must be to be taken for a dead API process's (far past the API's 60 s call deadline). */
export const HELPER_RESERVATION_TTL_SECONDS = 600;

/** The paid blocks `calls` calls of one day take. */
export const paidBlocks = (calls: number): number => Math.max(0, Math.ceil((calls - FREE_HELPER_CALLS) / HELPER_CALLS_PER_SPARK));

/** The reference of a block's hold; its charge is booked as `charge:<reference>`. */
const blockReference = (accountId: number, day: string, block: number) => `helpers:${accountId}:${day}:${block}`;

const TODAY = `(now() AT TIME ZONE 'UTC')::date`;

/** The call would open a paid block that the balance cannot hold. */
export class HelperCallUnpaid extends Error {
  constructor(readonly usedToday: number) {
    super(`The ${FREE_HELPER_CALLS} free helper calls of today are used and the balance cannot pay the next block`);
  }
}

/** A call counted as in flight on its UTC day (the day it was reserved, even if it finishes after midnight). */
export interface HelperReservation { id: string; accountId: number; day: string }

/** Reserves one call of today; holds 1 spark when it opens a paid block, else throws HelperCallUnpaid. */
export async function reserveHelperCall(db: DataSource, accountId: number, keyId: number | null): Promise<HelperReservation> {
  let usedToday = 0;
  try {
    return await transactionWithHolds(db, accountId, 1, async (m) => {
      const count = await sqlRow(m,
        `INSERT INTO helper_usage (account_id, day, pending) VALUES ($1, ${TODAY}, 1)
         ON CONFLICT (account_id, day) DO UPDATE SET pending = helper_usage.pending + 1
         RETURNING day::text AS day, used, pending`, [accountId]);
      const { day, used, pending } = count!;
      usedToday = used;
      const block = paidBlocks(used + pending);
      if (block > paidBlocks(used + pending - 1)) await holdSparksUnder(m, accountId, keyId, blockReference(accountId, day, block), 1);
      const reservation = await sqlRow(m,
        'INSERT INTO helper_reservations (account_id, day) VALUES ($1, $2) RETURNING id::text AS id', [accountId, day]);
      return { id: reservation!.id, accountId, day };
    });
  } catch (err) {
    if (err instanceof InsufficientSparks) throw new HelperCallUnpaid(usedToday);
    throw err;
  }
}

/** Counts a reserved call that succeeded and charges the block it completes into. False if it had expired. */
export async function completeHelperCall(db: DataSource, reservation: HelperReservation): Promise<boolean> {
  return db.transaction(async (m) => {
    if (!(await takeReservation(m, reservation))) return false;
    const { used } = (await sqlRow(m,
      `UPDATE helper_usage SET used = used + 1, pending = pending - 1 WHERE account_id = $1 AND day = $2 RETURNING used`,
      [reservation.accountId, reservation.day]))!;
    if (paidBlocks(used) > paidBlocks(used - 1)) await settleBlock(m, reservation, paidBlocks(used), 'charged');
    return true;
  });
}

/** Forgets a reserved call that failed: not counted, and the block no call needs any more is released. */
export async function cancelHelperCall(db: DataSource, reservation: HelperReservation): Promise<boolean> {
  return db.transaction(async (m) => {
    if (!(await takeReservation(m, reservation))) return false;
    const { used, pending } = (await sqlRow(m,
      `UPDATE helper_usage SET pending = pending - 1 WHERE account_id = $1 AND day = $2 RETURNING used, pending`,
      [reservation.accountId, reservation.day]))!;
    const needed = paidBlocks(used + pending + 1);
    if (paidBlocks(used + pending) < needed) await settleBlock(m, reservation, needed, 'released');
    return true;
  });
}

/**
 * Cancels the reservations older than `olderThanSeconds`: their API process died during the call (a live one
 * finishes every call within its deadline). Answers how many it cancelled.
 */
export async function expireHelperReservations(db: DataSource, olderThanSeconds: number): Promise<number> {
  const stale = await sqlRows(db.manager,
    `SELECT id::text AS id, account_id, day::text AS day FROM helper_reservations
      WHERE created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT 1000`, [olderThanSeconds]);
  let cancelled = 0;
  for (const row of stale) {
    if (await cancelHelperCall(db, { id: row.id, accountId: row.account_id, day: row.day })) cancelled++;
  }
  return cancelled;
}

export interface HelperUsageView { used_today: number; free_limit: number; free_remaining: number; paid_rate: string }

/** Today's succeeded calls (calls in flight count once they succeed). */
export async function readHelperUsage(manager: EntityManager, accountId: number): Promise<HelperUsageView> {
  const row = await sqlRow(manager, `SELECT used FROM helper_usage WHERE account_id = $1 AND day = ${TODAY}`, [accountId]);
  const used: number = row?.used ?? 0;
  return {
    used_today: used, free_limit: FREE_HELPER_CALLS, free_remaining: Math.max(0, FREE_HELPER_CALLS - used), paid_rate: HELPER_PAID_RATE,
  };
}

/** Deletes the reservation row: only the one who deletes it finishes the call. */
async function takeReservation(m: EntityManager, reservation: HelperReservation): Promise<boolean> {
  return Boolean(await sqlRow(m, 'DELETE FROM helper_reservations WHERE id = $1 RETURNING id', [reservation.id]));
}

async function settleBlock(m: EntityManager, reservation: HelperReservation, block: number, outcome: Settlement): Promise<void> {
  const reference = blockReference(reservation.accountId, reservation.day, block);
  if (!(await settleHoldUnder(m, reference, outcome))) throw new Error(`helper block ${reference} has no open hold`);
}
