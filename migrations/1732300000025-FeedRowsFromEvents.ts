import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the feed's rows of an action's moves (`account_events`, kinds `action` and `job`) were written by a trigger on
 * `action_events` that looked up again what `record_action_event` had just read (the action's account, its job, the
 * previous event): three lookups and a trigger call per move of every action and job, on the hottest path there is.
 * `record_action_event` now writes them itself with the values it holds; the rows are the same (same transaction,
 * same `seq`, same conditions: an `action` row when the action's status changed, a `job` row when the job's status
 * or phase did). Replaced in one transaction, so no move is recorded twice or not at all.
 */
export class FeedRowsFromEvents1732300000025 implements MigrationInterface {
  name = 'FeedRowsFromEvents1732300000025';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION record_action_event(p_action_id integer) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE
        a record;
        j record;
        prev record;
        now_status record;
        next_seq integer;
      BEGIN
        -- The action's row lock orders the events of one action (held already when the action itself moved).
        SELECT status, provider, progress, account_id INTO a FROM actions WHERE id = p_action_id FOR NO KEY UPDATE;
        SELECT id, status, phase, attempts, provider INTO j FROM jobs WHERE action_id = p_action_id;
        SELECT seq, action_status, job_status, phase, attempt, provider, percent INTO prev
          FROM action_events WHERE action_id = p_action_id ORDER BY seq DESC LIMIT 1;
        now_status := ROW(a.status, j.status, j.phase, j.attempts, COALESCE(j.provider, a.provider),
                          CASE WHEN a.status = 'completed' THEN 100 ELSE a.progress END::smallint);
        -- The action and its job moved in one transaction: one event, not one per row.
        IF prev.seq IS NOT NULL AND ROW(prev.action_status, prev.job_status, prev.phase, prev.attempt, prev.provider, prev.percent)
             IS NOT DISTINCT FROM now_status THEN
          RETURN;
        END IF;
        next_seq := COALESCE(prev.seq, 0) + 1;
        INSERT INTO action_events (action_id, seq, action_status, job_status, phase, attempt, provider, percent)
          VALUES (p_action_id, next_seq, a.status, j.status, j.phase, j.attempts, COALESCE(j.provider, a.provider),
                  CASE WHEN a.status = 'completed' THEN 100 ELSE a.progress END);
        -- The account's feed (migration AccountEvents): the moves an integrator reconciles, not progress or attempts.
        INSERT INTO account_events (account_id, kind, action_id, seq, job_id, status, phase)
          SELECT a.account_id, moved.kind, p_action_id, next_seq, j.id, moved.status, moved.phase
            FROM (VALUES ('action', a.status::text, NULL::text,
                          prev.seq IS NULL OR prev.action_status IS DISTINCT FROM a.status),
                         ('job', j.status::text, j.phase::text,
                          j.id IS NOT NULL AND j.status IS NOT NULL
                          AND (prev.seq IS NULL OR ROW(prev.job_status, prev.phase) IS DISTINCT FROM ROW(j.status, j.phase))))
                 AS moved(kind, status, phase, changed)
           WHERE moved.changed;
        PERFORM pg_notify('action_events', p_action_id::text);
      END $$`);
    await q.query('DROP TRIGGER IF EXISTS action_events_to_account ON action_events');
    await q.query('DROP FUNCTION IF EXISTS account_events_of_action()');
  }

  async down(q: QueryRunner): Promise<void> {
    // As migrations ActionEvents and AccountEvents made them.
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
      CREATE OR REPLACE FUNCTION account_events_of_action() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
      DECLARE
        prev record;
        owner integer;
        job uuid;
      BEGIN
        SELECT account_id INTO owner FROM public.actions WHERE id = NEW.action_id;
        SELECT id INTO job FROM public.jobs WHERE action_id = NEW.action_id;
        SELECT action_status, job_status, phase INTO prev FROM public.action_events WHERE action_id = NEW.action_id AND seq = NEW.seq - 1;
        IF prev IS NULL OR prev.action_status IS DISTINCT FROM NEW.action_status THEN
          INSERT INTO public.account_events (account_id, kind, action_id, seq, job_id, status)
            VALUES (owner, 'action', NEW.action_id, NEW.seq, job, NEW.action_status);
        END IF;
        IF job IS NOT NULL AND NEW.job_status IS NOT NULL
           AND (prev IS NULL OR ROW(prev.job_status, prev.phase) IS DISTINCT FROM ROW(NEW.job_status, NEW.phase)) THEN
          INSERT INTO public.account_events (account_id, kind, action_id, seq, job_id, status, phase)
            VALUES (owner, 'job', NEW.action_id, NEW.seq, job, NEW.job_status, NEW.phase);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query('DROP TRIGGER IF EXISTS action_events_to_account ON action_events');
    await q.query(`CREATE TRIGGER action_events_to_account AFTER INSERT ON action_events FOR EACH ROW EXECUTE FUNCTION account_events_of_action()`);
  }
}
