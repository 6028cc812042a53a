import { EntityManager } from 'typeorm';

/**
 * Runs SQL and returns its rows. TypeORM's Postgres driver answers UPDATE and DELETE with `[rows, rowCount]`
 * and everything else with `rows`; this hides the difference so `RETURNING` reads the same everywhere.
 */
export async function sqlRows<T = Record<string, any>>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  const raw = await manager.query(sql, params);
  return /^\s*(UPDATE|DELETE)\b/i.test(sql) ? raw[0] : raw;
}

export async function sqlRow<T = Record<string, any>>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T | undefined> {
  return (await sqlRows<T>(manager, sql, params))[0];
}
