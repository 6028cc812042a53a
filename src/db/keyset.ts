/**
 * Keyset paging's cursors: opaque to clients (base64url of a JSON array), carrying where a page ended: a row's time
 * to the microsecond in UTC (as `positionTimeSql` writes it, so that it compares exactly with the column) and its
 * id. What a forged cursor carries is checked before it reaches a statement: a real instant in that exact form, an
 * int4 id.
 */

/** SQL of `column`'s time as a position: `2026-11-27 23:44:52.898123+00`. */
export const positionTimeSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'`;

const POSITION_TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\+00$/;

/** A position's time: its exact form, and a real instant (no 30 February). */
export function isPositionTime(at: unknown): at is string {
  if (typeof at !== 'string' || !POSITION_TIME.test(at)) return false;
  const toMilliseconds = `${at.slice(0, 10)}T${at.slice(11, 23)}`;
  const parsed = new Date(`${toMilliseconds}Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 23) === toMilliseconds;
}

/** A row id a statement takes (int4, positive). */
export const isRowId = (id: unknown): id is number => Number.isInteger(id) && (id as number) > 0 && (id as number) <= 2_147_483_647;

export const encodeCursor = (parts: unknown[]): string => Buffer.from(JSON.stringify(parts)).toString('base64url');

/** The parts a cursor carries, or undefined when it is not an array of ours (each part is checked by its list). */
export function cursorParts(cursor: string): unknown[] | undefined {
  try {
    const parts: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return Array.isArray(parts) ? parts : undefined;
  } catch {
    return undefined;
  }
}
