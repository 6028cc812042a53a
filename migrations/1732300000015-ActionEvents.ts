import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: live progress (`GET /status/{action_id}/events`, `GET /jobs/{job_id}/events`). Every change of an action's
 * status, provider or progress, and of its job's status, phase, attempts or provider, is appended to
 * `action_events` by a trigger deferred to the commit of the transaction that made it (one event per transaction,
 * and none when nothing a reader sees changed), and announced with `pg_notify('action_events', action_id)` at commit, so
 * any API process can stream any action and a client that reconnects resumes from the log without loss.
 *
 * `seq` counts an action's events from 1. The trigger writes it while holding the action's row lock (an update of
 * the action holds it already; a job's trigger takes it, in the house order: action before job), so the events of
 * one action are committed in `seq` order: a reader that has seen `seq` n never sees an n-1 appear later.
 *
 * `actions.progress` is the percent a provider reports while it renders (Runway's task `progress`), written by
 * `advanceVideoRender`; it was not recorded before.
 *
 * A rolling upgrade keeps serving while this runs, so it runs outside one transaction, in short steps that each
 * take `actions` only for an instant (and give up after `lock_timeout` rather than queue every reader behind them,
 * trying again), and it is safe to run again after any step failed: the column and its check (validated without
 * blocking writes), the table, the functions, the triggers, and then the backfill of the actions made before, in
 * batches. (It first shipped as one transaction that held `actions` for the whole backfill; a database that ran
 * that version has the same schema.)
 */
export class ActionEvents1732300000015 implements MigrationInterface {
  name = 'ActionEvents1732300000015';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await briefly(q, `ALTER TABLE actions ADD COLUMN IF NOT EXISTS progress smallint`);
    const checked = await q.query(`SELECT convalidated FROM pg_constraint WHERE conname = 'actions_progress_check' AND conrelid = 'actions'::regclass`);
    if (checked.length === 0) await briefly(q, `ALTER TABLE actions ADD CONSTRAINT actions_progress_check CHECK (progress BETWEEN 0 AND 100) NOT VALID`);
    if (!checked[0]?.convalidated) await q.query(`ALTER TABLE actions VALIDATE CONSTRAINT actions_progress_check`); // reads go on, writes too
    await q.query(`
      CREATE TABLE IF NOT EXISTS action_events (
        action_id integer NOT NULL REFERENCES actions(id) ON DELETE CASCADE,
        seq integer NOT NULL,
        action_status text NOT NULL,
        job_status text,
        phase text,
        attempt integer,
        provider text,
        percent smallint,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (action_id, seq)
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION record_action_event(p_action_id integer) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE
        a record;
        j record;
        prev record;
        now_status record;
      BEGIN
        -- The action's row lock orders the events of one action (held already when the action itself moved).
        SELECT status, provider, progress INTO a FROM actions WHERE id = p_action_id FOR NO KEY UPDATE;
        SELECT status, phase, attempts, provider INTO j FROM jobs WHERE action_id = p_action_id;
        SELECT seq, action_status, job_status, phase, attempt, provider, percent INTO prev
          FROM action_events WHERE action_id = p_action_id ORDER BY seq DESC LIMIT 1;
        now_status := ROW(a.status, j.status, j.phase, j.attempts, COALESCE(j.provider, a.provider),
                          CASE WHEN a.status = 'completed' THEN 100 ELSE a.progress END::smallint);
        -- The action and its job moved in one transaction: one event, not one per row.
        IF prev.seq IS NOT NULL AND ROW(prev.action_status, prev.job_status, prev.phase, prev.attempt, prev.provider, prev.percent)
             IS NOT DISTINCT FROM now_status THEN
          RETURN;
        END IF;
        INSERT INTO action_events (action_id, seq, action_status, job_status, phase, attempt, provider, percent)
          VALUES (p_action_id, COALESCE(prev.seq, 0) + 1, a.status, j.status, j.phase, j.attempts, COALESCE(j.provider, a.provider),
                  CASE WHEN a.status = 'completed' THEN 100 ELSE a.progress END);
        PERFORM pg_notify('action_events', p_action_id::text);
      END $$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION action_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status OR NEW.provider IS DISTINCT FROM OLD.provider
           OR NEW.progress IS DISTINCT FROM OLD.progress THEN
          PERFORM record_action_event(NEW.id);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status OR NEW.phase IS DISTINCT FROM OLD.phase
           OR NEW.attempts IS DISTINCT FROM OLD.attempts OR NEW.provider IS DISTINCT FROM OLD.provider THEN
          PERFORM record_action_event(NEW.action_id);
        END IF;
        RETURN NULL;
      END $$`);
    // Deferred to the commit: the event shows the action and its job as the transaction leaves them (what a reader
    // can see), never a state inside it. Made before the backfill, so that no move of an action goes unrecorded.
    for (const [table, fn] of [['actions', 'action_changed'], ['jobs', 'job_changed']]) {
      const trigger = `${table}_event`;
      await briefly(q, `DROP TRIGGER IF EXISTS ${trigger} ON ${table}`,
        `CREATE CONSTRAINT TRIGGER ${trigger} AFTER INSERT OR UPDATE ON ${table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
    }
    // Actions made before start their log with their state now, so that a stream on one of them (an ended one
    // above all) has its final event and closes. Each batch takes its actions' row locks as the trigger does, so a
    // move committing meanwhile is recorded after the backfilled event (seq 2), or first, and then the backfill's
    // event is not written.
    const [{ last }] = await q.query(`SELECT COALESCE(max(id), 0) AS last FROM actions`);
    for (let from = 0; from < last; from += BACKFILL_BATCH) {
      await q.query(`
        INSERT INTO action_events (action_id, seq, action_status, job_status, phase, attempt, provider, percent, created_at)
        SELECT a.id, 1, a.status, j.status, j.phase, j.attempts, COALESCE(j.provider, a.provider),
               CASE WHEN a.status = 'completed' THEN 100 END, COALESCE(a.completed_at, a.updated_at, a.created_at)
          FROM actions a LEFT JOIN jobs j ON j.action_id = a.id
         WHERE a.id > $1 AND a.id <= $2 AND NOT EXISTS (SELECT 1 FROM action_events e WHERE e.action_id = a.id)
           FOR NO KEY UPDATE OF a
        ON CONFLICT DO NOTHING`, [from, from + BACKFILL_BATCH]);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS jobs_event ON jobs`);
    await q.query(`DROP TRIGGER IF EXISTS actions_event ON actions`);
    await q.query(`DROP FUNCTION IF EXISTS job_changed()`);
    await q.query(`DROP FUNCTION IF EXISTS action_changed()`);
    await q.query(`DROP FUNCTION IF EXISTS record_action_event(integer)`);
    await q.query(`DROP TABLE IF EXISTS action_events`);
    await q.query(`ALTER TABLE actions DROP COLUMN IF EXISTS progress`);
  }
}

/** Actions backfilled per statement (each its own short transaction). */
const BACKFILL_BATCH = 5_000;

/**
 * Runs `statements` in one transaction that waits at most 2 s for its locks (so that it never queues every reader
 * of the table behind a long transaction), trying again up to 30 times.
 */
async function briefly(q: QueryRunner, ...statements: string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await q.startTransaction();
    try {
      await q.query(`SET LOCAL lock_timeout = '2s'`);
      for (const sql of statements) await q.query(sql);
      await q.commitTransaction();
      return;
    } catch (err) {
      await q.rollbackTransaction();
      if ((err as { code?: string }).code !== '55P03' || attempt === 30) throw err; // 55P03: lock_not_available
    }
  }
}
