/**
 * An account's money moves, newest first, as the dashboard's billing page and its CSV export read them: grants and
 * charges (the balance's ledger, `spark_ledger`), holds (each `spark_holds` row when it was made) and releases (a
 * released hold when it was settled). A grant adds to the balance and a charge takes from it; a hold takes from
 * what is available and a release gives it back (a charged hold's charge is its own entry). Each entry names its
 * action, or its reference where it has none (a helper-call block, a grant).
 *
 * Pages are keyset-paged on (time, source, id): each of the three parts is read by its own index in that order
 * (migration 0020) and at most a page of each is merged, so every page costs the same however long the history is.
 */
import type { DataSource } from 'typeorm';
import { cursorParts, encodeCursor, isPositionTime, isRowId, positionTimeSql } from '../db/keyset';

export type LedgerKind = 'grant' | 'charge' | 'hold' | 'release';

export interface LedgerEntry {
  at: Date; kind: LedgerKind; amount: number; action_id: number | null; reference: string | null;
}

/** Where a page ends: the last entry's time (to the microsecond: src/db/keyset.ts), source and id. */
interface Position { at: string; source: Source; id: number }
/** The parts, in the order entries of one instant are listed: ledger rows, then holds, then releases. */
type Source = 'l' | 'h' | 'r';
const SOURCES: Source[] = ['l', 'h', 'r'];

const PARTS: Record<Source, { select: string; table: string; time: string; filter: string }> = {
  l: { select: `'l' AS source, id, created_at AS at, kind, amount, action_id, reference`, table: 'spark_ledger', time: 'created_at', filter: '' },
  h: { select: `'h' AS source, id, created_at AS at, 'hold' AS kind, -amount AS amount, action_id, reference`, table: 'spark_holds', time: 'created_at', filter: '' },
  r: {
    select: `'r' AS source, id, settled_at AS at, 'release' AS kind, amount, action_id, reference`, table: 'spark_holds', time: 'settled_at',
    filter: ` AND status = 'released'`,
  },
};

export const encodeLedgerCursor = (p: Position): string => encodeCursor([p.at, p.source, p.id]);

/** The position a cursor names, or undefined when it is not one of this list's. */
export function decodeLedgerCursor(cursor: string): Position | undefined {
  const [at, source, id] = cursorParts(cursor) ?? [];
  return isPositionTime(at) && SOURCES.includes(source as Source) && isRowId(id) ? { at, source: source as Source, id } : undefined;
}

/**
 * A page of the account's entries after `after` (from the newest when undefined), and the cursor of the next page
 * (null at the end).
 */
export async function ledgerPage(
  db: DataSource, accountId: number, after: Position | undefined, limit: number,
): Promise<{ entries: LedgerEntry[]; next: Position | null }> {
  const params: unknown[] = [accountId, limit + 1];
  if (after) params.push(after.at, after.id);
  const parts = SOURCES.map((source) => {
    const part = PARTS[source];
    let position = '';
    if (after) {
      // After the cursor in list order: of its instant, a part listed before the cursor's has nothing left, the
      // cursor's own part what has a smaller id, a part listed after it everything.
      const rank = SOURCES.indexOf(source) - SOURCES.indexOf(after.source);
      position = rank < 0 ? ` AND ${part.time} < $3::timestamptz`
        : rank === 0 ? ` AND (${part.time}, id) < ($3::timestamptz, $4)` : ` AND ${part.time} <= $3::timestamptz`;
    }
    return `(SELECT ${part.select}, ${positionTimeSql(part.time)} AS at_text FROM ${part.table}
              WHERE account_id = $1${part.filter}${position} ORDER BY ${part.time} DESC, id DESC LIMIT $2)`;
  });
  const rows: (LedgerEntry & { source: Source; id: number; at_text: string })[] = await db.query(
    `SELECT * FROM (${parts.join(' UNION ALL ')}) e ORDER BY at DESC, array_position(ARRAY['l', 'h', 'r'], source), id DESC LIMIT $2`,
    params,
  );
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    entries: page.map(({ at, kind, amount, action_id, reference }) => ({ at, kind, amount, action_id, reference })),
    next: more && last ? { at: last.at_text, source: last.source, id: last.id } : null,
  };
}
