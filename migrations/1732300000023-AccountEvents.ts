import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the account event feed (`GET /api/v1/public/events`, `GET /api/v2/events`), so that an integrator can
 * reconcile what its webhooks missed. `account_events` gets a row, in the same transaction, for:
 * - each change of an action's status (`kind` `action`) and of its v2 job's status or phase (`job`), from
 *   `action_events` (its rows are written at commit by the live-progress trigger, one per transaction);
 * - each webhook delivery's outcome (`delivery`: `succeeded`, `failed` or `skipped`; a redelivery's outcome again).
 *
 * Order: by the writing transaction's id (`xid`), then `id`. A reader takes only rows of transactions older than
 * every transaction still running (`xid < pg_snapshot_xmin(pg_current_snapshot())`), so no row can ever appear
 * before a position a reader has passed: a cursor loses nothing and sees nothing twice. A transaction has its id
 * from its first write, not from its commit, so two changes of one action may come in the other order (a cancel
 * that locked the hold first, then waited for the action's row): `seq`, the action's own event number from
 * `action_events`, orders them (the highest is the latest).
 *
 * Retention: the housekeeping schedule deletes the oldest rows (older than 30 days) as a prefix of that order and
 * records the last deleted position in `account_events_horizon`; a cursor before it answers 410.
 */
export class AccountEvents1732300000023 implements MigrationInterface {
  name = 'AccountEvents1732300000023';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS account_events (
        id bigserial PRIMARY KEY,
        account_id integer NOT NULL,
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        kind text NOT NULL CHECK (kind IN ('action', 'job', 'delivery')),
        action_id integer NOT NULL,
        seq integer,
        job_id uuid,
        delivery_id uuid,
        status text NOT NULL,
        phase text,
        webhook_event text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    // One index per feed, so that a page reads only the rows of its feed.
    await q.query(`CREATE INDEX IF NOT EXISTS account_events_v1 ON account_events (account_id, xid, id) WHERE kind IN ('action', 'delivery')`);
    await q.query(`CREATE INDEX IF NOT EXISTS account_events_v2 ON account_events (account_id, xid, id) WHERE kind = 'job' OR (kind = 'delivery' AND job_id IS NOT NULL)`);
    await q.query('CREATE INDEX IF NOT EXISTS account_events_order ON account_events (xid, id)');
    await q.query(`
      CREATE TABLE IF NOT EXISTS account_events_horizon (
        id integer PRIMARY KEY CHECK (id = 1),
        xid xid8 NOT NULL,
        event_id bigint NOT NULL
      )`);
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
    await q.query(`
      CREATE OR REPLACE FUNCTION account_events_of_delivery() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
      BEGIN
        INSERT INTO public.account_events (account_id, kind, action_id, job_id, delivery_id, status, webhook_event)
          VALUES (NEW.account_id, 'delivery', NEW.action_id, (SELECT id FROM public.jobs WHERE action_id = NEW.action_id),
                  NEW.id, NEW.status, NEW.event);
        RETURN NULL;
      END $$`);
    await q.query('DROP TRIGGER IF EXISTS webhook_deliveries_to_account ON webhook_deliveries');
    await q.query(`
      CREATE TRIGGER webhook_deliveries_to_account AFTER UPDATE OF status ON webhook_deliveries
        FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('succeeded', 'failed', 'skipped'))
        EXECUTE FUNCTION account_events_of_delivery()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER IF EXISTS webhook_deliveries_to_account ON webhook_deliveries');
    await q.query('DROP TRIGGER IF EXISTS action_events_to_account ON action_events');
    await q.query('DROP FUNCTION IF EXISTS account_events_of_delivery()');
    await q.query('DROP FUNCTION IF EXISTS account_events_of_action()');
    await q.query('DROP TABLE IF EXISTS account_events_horizon');
    await q.query('DROP TABLE IF EXISTS account_events');
  }
}
