import { EntityManager } from 'typeorm';

/**
 * Runs SQL and returns its rows. TypeORM's Postgres driver answers UPDATE and DELETE (also behind a `WITH`) with
 * `[rows, rowCount]` and everything else with `rows`; this hides the difference so `RETURNING` reads the same
 * everywhere. Rows are objects, never arrays, so the shape tells which answer it is.
 */
export async function sqlRows<T = Record<string, any>>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  const raw = await manager.query(sql, params);
  return Array.isArray(raw) && raw.length === 2 && Array.isArray(raw[0]) && typeof raw[1] === 'number' ? raw[0] : raw;
}

export async function sqlRow<T = Record<string, any>>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T | undefined> {
  return (await sqlRows<T>(manager, sql, params))[0];
}

/**
 * Whether an error says the database is away for a while (connection lost, refused or timed out; the server
 * shutting down or starting), as opposed to a statement it refused. Such errors pass once it is back.
 */
export function databaseAway(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown }; message?: unknown };
  const code = String(e?.driverError?.code ?? e?.code ?? '');
  return /^(08|57P0[123]|ECONN|ETIMEDOUT|EPIPE|EHOSTUNREACH)/.test(code)
    || /Connection terminated|connection timeout|Connection ended|timeout exceeded when trying to connect/i.test(String(e?.message ?? ''));
}
