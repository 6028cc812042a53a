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
 */
export class ActionEvents1732300000015 implements MigrationInterface {
  name = 'ActionEvents1732300000015';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE actions ADD COLUMN progress smallint CHECK (progress BETWEEN 0 AND 100)`);
    await q.query(`
      CREATE TABLE action_events (
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
    // Actions made before this migration start their log with their state now, so that a stream on one of them
    // (an ended one above all) has its final event and closes.
    await q.query(`
      INSERT INTO action_events (action_id, seq, action_status, job_status, phase, attempt, provider, percent, created_at)
      SELECT a.id, 1, a.status, j.status, j.phase, j.attempts, COALESCE(j.provider, a.provider),
             CASE WHEN a.status = 'completed' THEN 100 END, COALESCE(a.completed_at, a.updated_at, a.created_at)
        FROM actions a LEFT JOIN jobs j ON j.action_id = a.id`);
    await q.query(`
      CREATE FUNCTION record_action_event(p_action_id integer) RETURNS void LANGUAGE plpgsql AS $$
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
      CREATE FUNCTION action_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status OR NEW.provider IS DISTINCT FROM OLD.provider
           OR NEW.progress IS DISTINCT FROM OLD.progress THEN
          PERFORM record_action_event(NEW.id);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status OR NEW.phase IS DISTINCT FROM OLD.phase
           OR NEW.attempts IS DISTINCT FROM OLD.attempts OR NEW.provider IS DISTINCT FROM OLD.provider THEN
          PERFORM record_action_event(NEW.action_id);
        END IF;
        RETURN NULL;
      END $$`);
    // Deferred to the commit: the event shows the action and its job as the transaction leaves them (what a reader
    // can see), never a state inside it.
    await q.query(`CREATE CONSTRAINT TRIGGER actions_event AFTER INSERT OR UPDATE ON actions DEFERRABLE INITIALLY DEFERRED
                     FOR EACH ROW EXECUTE FUNCTION action_changed()`);
    await q.query(`CREATE CONSTRAINT TRIGGER jobs_event AFTER INSERT OR UPDATE ON jobs DEFERRABLE INITIALLY DEFERRED
                     FOR EACH ROW EXECUTE FUNCTION job_changed()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER jobs_event ON jobs`);
    await q.query(`DROP TRIGGER actions_event ON actions`);
    await q.query(`DROP FUNCTION job_changed()`);
    await q.query(`DROP FUNCTION action_changed()`);
    await q.query(`DROP FUNCTION record_action_event(integer)`);
    await q.query(`DROP TABLE action_events`);
    await q.query(`ALTER TABLE actions DROP COLUMN progress`);
  }
}
