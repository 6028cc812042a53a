/**
 * Migrations that run during a rolling upgrade, on a database of their own (made at the migration before, filled,
 * then migrated on): the live-progress log (0015) is backfilled in batches for every action made before it, it
 * waits for a write in flight instead of failing, and running it again changes nothing.
 */
import assert from 'node:assert/strict';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { ActionEvents1732300000015 } from '../../migrations/1732300000015-ActionEvents';
import { ensureDatabaseExists, migrate } from '../../src/db/data-source';
import { eventually } from '../support/fixtures';
import { testEnvironment } from '../support/environment';

const ACTIONS = 12_000; // three batches of the backfill
const STATUSES = ['pending', 'processing', 'completed', 'failed', 'cancelled'];

function migrationsDatabaseUrl(): string {
  const url = new URL(testEnvironment().databaseUrl);
  url.pathname = `${url.pathname}_migrations`;
  return url.toString();
}

/** A data source with `list` as its migrations, on the migrations database. */
async function dataSourceWith(list: typeof migrations): Promise<DataSource> {
  const db = new DataSource({ type: 'postgres', url: migrationsDatabaseUrl(), migrations: list, extra: { max: 2, application_name: 'migrating' } });
  return db.initialize();
}

describe('migration 0015 (action events) on a database in use', function () {
  this.timeout(120_000);
  let url: string;
  const before0015 = migrations.slice(0, migrations.indexOf(ActionEvents1732300000015));
  let sql: Client;

  before(async () => {
    url = migrationsDatabaseUrl();
    await ensureDatabaseExists(url);
    sql = new Client({ connectionString: url });
    await sql.connect();
    await sql.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    const older = await dataSourceWith(before0015);
    await migrate(older);
    await older.destroy();
    // The actions of a release before live progress: every status in turn (id 1 processing, 2 completed, ...), every third a v2 job.
    await sql.query(`
      WITH account AS (INSERT INTO accounts (name, balance) VALUES ('before 0015', 0) RETURNING id),
           project AS (INSERT INTO projects (account_id, source) SELECT id, 'api' FROM account RETURNING id, account_id),
           card AS (INSERT INTO cards (account_id, project_id, status, content_type, aspect_ratio)
                    SELECT account_id, id, 'ready', 'photo', '1:1' FROM project RETURNING id, account_id, project_id)
      INSERT INTO actions (account_id, project_id, card_id, type, product, status, price, params, provider, completed_at)
      SELECT card.account_id, card.project_id, card.id, 'generate', 'photo', ($1::text[])[1 + n % 5], 5, '{}', 'local',
             CASE WHEN n % 5 = 2 THEN now() - interval '1 day' END
        FROM card, generate_series(1, $2::int) AS n`, [STATUSES, ACTIONS]);
    await sql.query(`
      INSERT INTO jobs (id, account_id, action_id, type, status, phase, attempts, provider)
      SELECT gen_random_uuid(), account_id, id, 'generation.execute', CASE status WHEN 'completed' THEN 'succeeded' WHEN 'processing' THEN 'running' ELSE 'queued' END,
             CASE status WHEN 'completed' THEN 'completed' WHEN 'processing' THEN 'rendering' ELSE 'queued' END, 1, 'local'
        FROM actions WHERE id % 3 = 0`);
  });

  after(async () => {
    await sql?.end();
  });

  it('waits for a write in flight, backfills every action in batches, records later moves after, and runs again as a no-op', async () => {
    // A request's transaction in flight when the upgrade starts: the migration waits for it (trying again after
    // each 2 s lock timeout) instead of failing, and backfills what it committed.
    const inFlight = new Client({ connectionString: url });
    await inFlight.connect();
    await inFlight.query('BEGIN');
    await inFlight.query(`UPDATE actions SET status = 'cancelled', completed_at = now() WHERE id = 1`);
    const db = await dataSourceWith(migrations);
    try {
      const migrating = migrate(db);
      await eventually(async () => (await sql.query(`SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'migrating' AND query LIKE 'ALTER TABLE actions%'`)).rows[0]?.wait_event_type,
        (wait) => wait === 'Lock');
      const [{ count }] = (await sql.query('SELECT count(*)::int AS count FROM actions')).rows; // readers go on meanwhile
      assert.equal(count, ACTIONS);
      await inFlight.query('COMMIT');
      await migrating;

      const events = (await sql.query(`
        SELECT count(*)::int AS events, count(DISTINCT action_id)::int AS actions, max(seq)::int AS max_seq,
               count(*) FILTER (WHERE job_status IS NOT NULL)::int AS of_jobs, count(*) FILTER (WHERE percent = 100)::int AS done
          FROM action_events`)).rows[0];
      assert.deepEqual(events, { events: ACTIONS, actions: ACTIONS, max_seq: 1, of_jobs: ACTIONS / 3, done: ACTIONS / 5 });
      const first = (await sql.query('SELECT action_status FROM action_events WHERE action_id = 1')).rows;
      assert.deepEqual(first, [{ action_status: 'cancelled' }], 'the write in flight, as it committed');
      const job = (await sql.query(`SELECT action_status, job_status, phase, attempt, provider FROM action_events WHERE action_id = 12`)).rows[0];
      assert.deepEqual(job, { action_status: 'completed', job_status: 'succeeded', phase: 'completed', attempt: 1, provider: 'local' });
      const check = (await sql.query(`SELECT convalidated FROM pg_constraint WHERE conname = 'actions_progress_check'`)).rows;
      assert.deepEqual(check, [{ convalidated: true }]);
      await assert.rejects(sql.query('UPDATE actions SET progress = 101 WHERE id = 5'), /actions_progress_check/);

      // A move after the upgrade follows the backfilled event (action 5 was pending).
      await sql.query(`UPDATE actions SET status = 'processing', progress = 40 WHERE id = 5`);
      const moved = (await sql.query('SELECT seq, action_status, percent FROM action_events WHERE action_id = 5 ORDER BY seq')).rows;
      assert.deepEqual(moved, [{ seq: 1, action_status: 'pending', percent: null }, { seq: 2, action_status: 'processing', percent: 40 }]);

      // Run again (a retry after a step failed): nothing changes, nothing is written twice.
      const runner = db.createQueryRunner();
      try {
        await new ActionEvents1732300000015().up(runner);
      } finally {
        await runner.release();
      }
      assert.equal((await sql.query('SELECT count(*)::int AS n FROM action_events')).rows[0].n, ACTIONS + 1);
      const triggers = (await sql.query(`SELECT tgname FROM pg_trigger WHERE tgname IN ('actions_event', 'jobs_event') ORDER BY tgname`)).rows;
      assert.deepEqual(triggers.map((t: { tgname: string }) => t.tgname), ['actions_event', 'jobs_event']);
    } finally {
      await inFlight.end().catch(() => undefined);
      await db.destroy();
    }
  });
});
