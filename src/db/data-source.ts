import 'reflect-metadata';
import { AfterCommit } from './after-commit';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { entities } from './entities';
import { poolOf } from './prepared';

/**
 * How every pooled connection behaves when the network or a peer misbehaves:
 * - a query waits at most 10 s for a connection: a request to a database that is away answers 503 soon instead of
 *   hanging, and a busy worker's step waits long enough not to fail for a moment's queue;
 * - TCP keepalive probes an idle connection after 10 s, so a peer that vanished (a partition, a host gone) is found
 *   by the kernel instead of a query waiting on it for hours (the probes' interval and count are the system's);
 * - the server ends a session left idle inside a transaction for a minute, so a client lost mid-transaction (a
 *   partition, a frozen process) cannot hold an account's row locks and stall every charge on it.
 */
export const CONNECTION_SETTINGS = {
  connectionTimeoutMillis: 10_000,
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
  idle_in_transaction_session_timeout: 60_000,
} as const;

/** Connections in a process's pool unless told otherwise (the benchmark's floors use the same number). */
export const DEFAULT_POOL_SIZE = 20;

/** The one TypeORM data source of a process. The schema comes only from migrations/. */
export function createDataSource(databaseUrl: string, poolSize = DEFAULT_POOL_SIZE): DataSource {
  return new DataSource({
    type: 'postgres',
    url: databaseUrl,
    entities,
    migrations,
    migrationsRun: false,
    subscribers: [AfterCommit],
    synchronize: false,
    logging: false, // failures surface as errors through our logger, never as raw SQL with parameters
    extra: { max: poolSize, ...CONNECTION_SETTINGS },
  });
}

/** Opens the data source, creating the database first when it does not exist yet. */
export async function openDatabase(databaseUrl: string, options: { migrate: boolean; poolSize?: number }): Promise<DataSource> {
  await ensureDatabaseExists(databaseUrl);
  const dataSource = createDataSource(databaseUrl, options.poolSize);
  await dataSource.initialize();
  // Every pooled connection hears its own errors: Postgres stopping sends each session a FATAL message, which a
  // session between statements emits as an event, and a second event after TypeORM has let go of a broken one had
  // no listener and ended the process (a worker of the fault suite, Postgres stopped mid-job). A broken connection is
  // still found and dropped by its next statement.
  poolOf(dataSource).on('connect', (client) => client.on('error', () => undefined));
  if (options.migrate) await migrate(dataSource);
  return dataSource;
}

export async function ensureDatabaseExists(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) return;
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  admin.on('error', () => undefined); // a session lost between statements: the next statement fails instead
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created meanwhile by another process
      });
    }
  } finally {
    await admin.end();
  }
}

/** The URL of `db`'s database, for a connection of its own outside the pool (LISTEN, session advisory locks). */
export function databaseUrlOf(db: DataSource): string {
  return (db.options as { url: string }).url;
}

/** The session advisory locks of the service, one key each, so that none is ever taken for another. */
export const ADVISORY_LOCKS = { migrations: 7233001, reconciler: 7233002 } as const;

/**
 * Runs pending migrations under an advisory lock, so processes starting together migrate once. The lock lives
 * on its own connection, outside the pool the migrations use.
 */
export async function migrate(dataSource: DataSource): Promise<void> {
  const lock = new Client({ connectionString: databaseUrlOf(dataSource) });
  // Postgres stopping while the migrations run ends this idle session with an error event, which unheard would end
  // the process; the migrations' own statements fail then, and the start fails as it should.
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.migrations]);
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await lock.end().catch(() => undefined); // a lost session has given the lock back already
  }
}
