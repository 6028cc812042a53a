import type { Pool, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * A statement on the hot path of every poll, run as a named prepared statement straight on the data source's pg
 * pool: Postgres parses and plans it once per connection instead of once per request, and the call skips TypeORM's
 * query runner (a runner object, events and result shaping per query). Only for fixed SQL with explicit columns,
 * so a column added by a later migration cannot change a prepared result's shape.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

export function prepared(name: string, text: string): PreparedStatement {
  return { name, text };
}

/** The pg pool under a TypeORM Postgres data source (its `driver.master`). */
export function poolOf(db: DataSource): Pool {
  const pool = (db.driver as unknown as { master?: Pool }).master;
  if (!pool) throw new Error('the data source is not initialized');
  return pool;
}

export async function preparedRows<T extends QueryResultRow = Record<string, any>>(
  db: DataSource, statement: PreparedStatement, values: unknown[],
): Promise<T[]> {
  return (await poolOf(db).query<T>({ name: statement.name, text: statement.text, values })).rows;
}

export async function preparedRow<T extends QueryResultRow = Record<string, any>>(
  db: DataSource, statement: PreparedStatement, values: unknown[],
): Promise<T | undefined> {
  return (await preparedRows<T>(db, statement, values))[0];
}
