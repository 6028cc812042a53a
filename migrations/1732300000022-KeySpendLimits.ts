import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: an API key may carry a monthly spend limit in sparks (`api_keys.monthly_spend_limit`, null: none). What a key
 * holds or has charged in a calendar month (UTC) counts against it; what was released does not.
 *
 * - A hold names the key it was made with (`spark_holds.key_id`; null for holds of an older release, and for holds
 *   of no key, which count against nothing).
 * - `key_spend` is each key's sum per month. A new hold adds to it as its transaction commits (a deferred trigger,
 *   as `accounts.held` is raised: the row is locked for the commit alone), and that commit fails, keeping nothing,
 *   when the sum passes the key's limit (`key_spend_within_limit`; the exception's detail carries the limit, what was
 *   spent before and what was asked, as JSON). Concurrent requests of one key on any number of API processes queue
 *   on that row at their commits: the limit is exact.
 * - A release takes the hold's amount back from the month the hold was made in (a trigger on the status change,
 *   which happens once per hold), also as its transaction commits: the key's row is locked after the account's, in
 *   the order every hold takes them, for the commit alone (taken at once, a release would hold the key's row across
 *   its round trips while the account's new holds waited at their commits, and the two orders could deadlock).
 *   The add fires before the release (constraint triggers fire in name order), should one transaction do both.
 *   A charge keeps it.
 */
export class KeySpendLimits1732300000022 implements MigrationInterface {
  name = 'KeySpendLimits1732300000022';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS monthly_spend_limit integer CHECK (monthly_spend_limit >= 0)');
    await q.query('ALTER TABLE spark_holds ADD COLUMN IF NOT EXISTS key_id integer');
    await q.query(`
      CREATE TABLE IF NOT EXISTS key_spend (
        key_id integer NOT NULL REFERENCES api_keys(id),
        month date NOT NULL,
        sparks integer NOT NULL CHECK (sparks >= 0),
        PRIMARY KEY (key_id, month)
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION key_spend_add() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
      DECLARE
        spent integer;
        spend_limit integer;
      BEGIN
        INSERT INTO public.key_spend AS s (key_id, month, sparks)
          VALUES (NEW.key_id, date_trunc('month', NEW.created_at AT TIME ZONE 'UTC')::date, NEW.amount)
          ON CONFLICT (key_id, month) DO UPDATE SET sparks = s.sparks + EXCLUDED.sparks
          RETURNING s.sparks INTO spent;
        SELECT monthly_spend_limit INTO spend_limit FROM public.api_keys WHERE id = NEW.key_id;
        IF spend_limit IS NOT NULL AND spent > spend_limit THEN
          RAISE EXCEPTION 'key % would pass its monthly spend limit', NEW.key_id USING
            ERRCODE = 'check_violation', CONSTRAINT = 'key_spend_within_limit',
            DETAIL = json_build_object('limit', spend_limit, 'spent', spent - NEW.amount, 'required', NEW.amount)::text;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION key_spend_release() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
      BEGIN
        UPDATE public.key_spend SET sparks = sparks - NEW.amount
          WHERE key_id = NEW.key_id AND month = date_trunc('month', NEW.created_at AT TIME ZONE 'UTC')::date;
        RETURN NULL;
      END $$`);
    // Fired at commit in name order: spark_holds_reserved_at_commit (the account), then these two (the key).
    await q.query('DROP TRIGGER IF EXISTS spark_holds_spend_1_held ON spark_holds');
    await q.query(`
      CREATE CONSTRAINT TRIGGER spark_holds_spend_1_held AFTER INSERT ON spark_holds
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.status = 'held' AND NEW.key_id IS NOT NULL) EXECUTE FUNCTION key_spend_add()`);
    await q.query('DROP TRIGGER IF EXISTS spark_holds_spend_2_released ON spark_holds');
    await q.query(`
      CREATE CONSTRAINT TRIGGER spark_holds_spend_2_released AFTER UPDATE OF status ON spark_holds
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (OLD.status = 'held' AND NEW.status = 'released' AND NEW.key_id IS NOT NULL) EXECUTE FUNCTION key_spend_release()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER IF EXISTS spark_holds_spend_2_released ON spark_holds');
    await q.query('DROP TRIGGER IF EXISTS spark_holds_spend_1_held ON spark_holds');
    await q.query('DROP FUNCTION IF EXISTS key_spend_release()');
    await q.query('DROP FUNCTION IF EXISTS key_spend_add()');
    await q.query('DROP TABLE IF EXISTS key_spend');
    await q.query('ALTER TABLE spark_holds DROP COLUMN IF EXISTS key_id');
    await q.query('ALTER TABLE api_keys DROP COLUMN IF EXISTS monthly_spend_limit');
  }
}
