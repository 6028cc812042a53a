/**
 * `npm run migrate`: applies pending migrations to DATABASE_URL and exits (every process also migrates at start, under
 * the same advisory lock; this is for a deployment that migrates as a step of its own before rolling out).
 */
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/data-source';
import { log } from '../../src/log';

async function main(): Promise<void> {
  const db = await openDatabase(loadConfig().databaseUrl, { migrate: true, poolSize: 1 });
  const applied = await db.query('SELECT count(*)::int AS n FROM migrations');
  log.info('migrations applied', { total: applied[0].n });
  await db.destroy();
}

main().catch((err) => {
  log.error('migration failed', { error: String(err) });
  process.exit(1);
});
