/**
 * Sparks: holds, charges, releases and grants. Each happens exactly once whatever retries or duplicates occur:
 * - a hold is a row unique per action (or, for a hold that belongs to no action, one open row per `reference`); it
 *   raises `accounts.held` as its transaction commits (a deferred trigger, migration HoldsReservedAtCommit), and the
 *   `accounts_held_covered` check fails that commit when `balance - held` does not cover it (`transactionWithHolds`);
 * - charge and release move a hold out of `held` once (`WHERE status = 'held'`); the loser of a race sees 0 rows;
 * - a charge writes one ledger row with a unique reference, and the balance moves with it.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { prepared, preparedRow } from '../db/prepared';
import type { CompoundStatement } from '../db/statement';
import { sqlRow } from '../db/sql';
import { afterCommit } from '../db/after-commit';
import { sparksCharged, sparksHeld, sparksReleased } from '../metrics/registry';
import { spendLimitExceeded } from '../errors';

export class InsufficientSparks extends Error {
  constructor(readonly available: number, readonly required: number) {
    super(`Not enough sparks: ${available} available, ${required} required`);
  }
}

export interface BalanceView { balance: number; available: number; holds: number }

/** A poll target (`GET /balance`) and the 402 details: a prepared read, outside any transaction. */
const ACCOUNT_BALANCE = prepared('account_balance', 'SELECT balance, held FROM accounts WHERE id = $1');

export async function readBalance(db: DataSource, accountId: number): Promise<BalanceView> {
  const row = await preparedRow<{ balance: number; held: number }>(db, ACCOUNT_BALANCE, [accountId]);
  if (!row) throw new Error(`account ${accountId} not found`);
  return { balance: row.balance, available: row.balance - row.held, holds: row.held };
}

/**
 * Runs `work`, which makes holds of `accountId` (holdSparks, holdSparksUnder), in a transaction. The holds are
 * reserved as it commits: the account's row lock, which every request of the account waits for, is then held for
 * Postgres's commit alone, never for round trips through a busy process. When `balance - held` does not cover
 * them, the commit fails, nothing of the transaction is kept, and this throws InsufficientSparks (`required` is
 * what the caller held; `available` is read after the rollback).
 */
export function transactionWithHolds<T>(db: DataSource, accountId: number, required: number, work: (m: EntityManager) => Promise<T>): Promise<T> {
  return refusingUncoveredHolds(db, accountId, required, () => db.transaction(work));
}

/**
 * Runs `commit`, a transaction or a single statement that makes holds of `accountId` reserved at its commit; an
 * uncovered one fails the commit, and this throws InsufficientSparks instead (see transactionWithHolds).
 */
export async function refusingUncoveredHolds<T>(db: DataSource, accountId: number, required: number, commit: () => Promise<T>): Promise<T> {
  try {
    return await commit();
  } catch (err) {
    const e = err as { code?: string; constraint?: string; detail?: string };
    if (e.code === '23514' && e.constraint === SPEND_LIMIT_CONSTRAINT) {
      const { limit, spent, required: asked } = JSON.parse(e.detail!) as { limit: number; spent: number; required: number };
      throw spendLimitExceeded(limit, spent, asked);
    }
    if (e.code !== '23514' || e.constraint !== 'accounts_held_covered') throw err;
    throw new InsufficientSparks((await readBalance(db, accountId)).available, required);
  }
}

/**
 * What a hold of an API key's that would pass its monthly spend limit fails its commit with (migration
 * KeySpendLimits: each key's sum per month, added to as a hold commits, taken back when a hold is released).
 * refusingUncoveredHolds answers it as the 402 `spend_limit_exceeded`.
 */
export const SPEND_LIMIT_CONSTRAINT = 'key_spend_within_limit';

/** A key's monthly spend limit and what it holds or has charged this month (UTC). */
export interface KeySpend { limit: number | null; spent: number }

/** This calendar month (UTC), as `key_spend.month` names it (its triggers name a hold's month the same way). */
export const THIS_MONTH = `date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

const KEY_SPEND = prepared('key_spend', `
  SELECT k.monthly_spend_limit AS "limit", COALESCE(s.sparks, 0) AS spent FROM api_keys k
    LEFT JOIN key_spend s ON s.key_id = k.id AND s.month = ${THIS_MONTH}
   WHERE k.id = $1`);

export async function readKeySpend(db: DataSource, keyId: number): Promise<KeySpend> {
  const row = await preparedRow<KeySpend>(db, KEY_SPEND, [keyId]);
  return row ?? { limit: null, spent: 0 };
}

/**
 * Holds `amount` for `actionId`, made with the key `keyId` (its monthly spend counts it; null: no key's), reserved
 * when the transaction commits (see transactionWithHolds). A hold is never
 * settled in the transaction that made it: `held` has not been raised yet there.
 */
export async function holdSparks(manager: EntityManager, accountId: number, keyId: number | null, actionId: number, amount: number): Promise<void> {
  const held = await sqlRow<{ product: string }>(manager,
    `INSERT INTO spark_holds (account_id, action_id, amount, status, reserve_at_commit, key_id) VALUES ($1, $2, $3, 'held', true, $4)
     RETURNING (SELECT product FROM actions WHERE id = $2) AS product`,
    [accountId, actionId, amount, keyId],
  );
  afterCommit(manager, () => sparksHeld.inc({ product: held?.product ?? 'unknown' }, amount));
}

/**
 * The `hold` part of the accept statement (src/db/statement.ts): the hold of the statement's `action`, reserved as
 * the statement commits (see transactionWithHolds; an uncovered hold fails the whole statement), and added to the
 * monthly spend of the key `keyId` it was made with (one past the key's limit fails the statement too). Count it with
 * `countHeld` once the statement has committed.
 */
export function holdPart(statement: CompoundStatement, accountId: number, keyId: number | null, amount: number): string {
  return `INSERT INTO spark_holds (account_id, action_id, amount, status, reserve_at_commit, key_id)
    SELECT ${statement.param(accountId)}, action.id, ${statement.param(amount)}, 'held', true, ${statement.param(keyId)}::int FROM action RETURNING action_id`;
}

/**
 * The parts of a statement that charge an action's open hold: `charged` (the hold, `held` to `charged`: one row with
 * its `amount`, none when it was not open), its ledger row and the account's balance. The hold is what every
 * settlement of the action locks first. Count it with `countCharged` when it committed.
 */
export function chargeParts(statement: CompoundStatement, actionParam: string): void {
  statement.with('charged', `UPDATE spark_holds SET status = 'charged', settled_at = now()
     WHERE action_id = ${actionParam} AND status = 'held' RETURNING account_id, amount, action_id`);
  statement.with('charge_booked', `INSERT INTO spark_ledger (account_id, amount, kind, reference, action_id)
     SELECT account_id, -amount, 'charge', 'charge:action:' || action_id, action_id FROM charged`);
  statement.with('charge_balance', `UPDATE accounts a SET balance = a.balance - charged.amount, held = a.held - charged.amount, updated_at = now()
     FROM charged WHERE a.id = charged.account_id`);
}

/** Counts a charge made by chargeParts into the charged-sparks metric, once its transaction commits. */
export function countCharged(m: EntityManager, product: string | null, amount: number): void {
  afterCommit(m, () => sparksCharged.inc({ product: product ?? 'unknown' }, amount));
}

/** Counts a hold made by a committed accept statement into the held-sparks metric. */
export function countHeld(product: string, amount: number): void {
  sparksHeld.inc({ product }, amount);
}

/**
 * Holds `amount` under `reference`, for a hold that belongs to no action (a paid block of helper calls), reserved
 * when the transaction commits (see transactionWithHolds) and counted against the monthly spend limit of `keyId`.
 * Only one hold per reference can be open.
 */
export async function holdSparksUnder(manager: EntityManager, accountId: number, keyId: number | null, reference: string, amount: number): Promise<void> {
  await manager.query(
    `INSERT INTO spark_holds (account_id, reference, amount, status, reserve_at_commit, key_id) VALUES ($1, $2, $3, 'held', true, $4)`,
    [accountId, reference, amount, keyId],
  );
  afterCommit(manager, () => sparksHeld.inc({ product: 'helper' }, amount));
}

export type Settlement = 'charged' | 'released';

interface HeldSparks { account_id: number; amount: number; product: string | null }

/**
 * Settles the hold of an action as `charged` (balance goes down, a ledger row is written) or `released`.
 * Returns what the hold ended as: settling again is a no-op that reports the first outcome, so a retried activity
 * never books twice and a late release cannot undo a charge.
 */
export async function settleHold(manager: EntityManager, actionId: number, outcome: Settlement): Promise<Settlement> {
  if (await settleOpenHold(manager, 'action_id', actionId, outcome, `charge:action:${actionId}`, actionId)) return outcome;
  const existing = await sqlRow(manager, 'SELECT status FROM spark_holds WHERE action_id = $1', [actionId]);
  if (!existing) throw new Error(`action ${actionId} has no spark hold`);
  return existing.status as Settlement;
}

/** Moves the open hold found by `column` out of `held` once, booking it; false when no such hold is open. */
async function settleOpenHold(
  manager: EntityManager, column: 'action_id' | 'reference', key: number | string, outcome: Settlement, ledgerReference: string, actionId: number | null,
): Promise<boolean> {
  const hold = await sqlRow<HeldSparks>(manager,
    `UPDATE spark_holds SET status = $2, settled_at = now()
      WHERE ${column} = $1 AND status = 'held'
      RETURNING account_id, amount, (SELECT product FROM actions WHERE id = spark_holds.action_id) AS product`,
    [key, outcome],
  );
  if (hold) {
    await book(manager, hold, outcome, ledgerReference, actionId);
    const settled = outcome === 'charged' ? sparksCharged : sparksReleased;
    afterCommit(manager, () => settled.inc({ product: hold.product ?? 'helper' }, hold.amount));
  }
  return Boolean(hold);
}

/** The money move of a settled hold: a charge writes its ledger row and lowers the balance; both lower `held`. */
async function book(manager: EntityManager, hold: HeldSparks, outcome: Settlement, ledgerReference: string, actionId: number | null): Promise<void> {
  if (outcome === 'charged') {
    await manager.query(
      `INSERT INTO spark_ledger (account_id, amount, kind, reference, action_id) VALUES ($1, $2, 'charge', $3, $4)`,
      [hold.account_id, -hold.amount, ledgerReference, actionId],
    );
    await manager.query(
      `UPDATE accounts SET balance = balance - $2, held = held - $2, updated_at = now() WHERE id = $1`,
      [hold.account_id, hold.amount],
    );
  } else {
    await manager.query(`UPDATE accounts SET held = held - $2, updated_at = now() WHERE id = $1`, [hold.account_id, hold.amount]);
  }
}

/**
 * Settles the open hold under `reference` (see holdSparksUnder); a charge is booked as `charge:<reference>`.
 * Answers false, moving nothing, when no hold under that reference is open.
 */
export async function settleHoldUnder(manager: EntityManager, reference: string, outcome: Settlement): Promise<boolean> {
  return settleOpenHold(manager, 'reference', reference, outcome, `charge:${reference}`, null);
}

/** Adds sparks to an account. `reference` makes the grant idempotent: the same reference books once. */
export async function grantSparks(manager: EntityManager, accountId: number, amount: number, reference: string): Promise<boolean> {
  const inserted = await manager.query(
    `INSERT INTO spark_ledger (account_id, amount, kind, reference) VALUES ($1, $2, 'grant', $3)
     ON CONFLICT (reference) DO NOTHING RETURNING id`,
    [accountId, amount, reference],
  );
  if (inserted.length === 0) return false;
  await manager.query('UPDATE accounts SET balance = balance + $2, updated_at = now() WHERE id = $1', [accountId, amount]);
  return true;
}
