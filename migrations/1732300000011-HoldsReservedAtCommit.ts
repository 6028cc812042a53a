import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: every request of an account waits for that account's row lock to raise `held`. Taken by the application, it
 * was held until the transaction's COMMIT reached Postgres, so for round trips through a busy API process, and an
 * account's requests queued behind each other (about 50 accepted a second, whatever the rest of the service could
 * do). Now a new hold raises `held` as its transaction commits, inside Postgres: a deferred constraint trigger on
 * `spark_holds`, so the lock lasts as long as the commit alone. A hold that `balance - held` does not cover makes
 * the commit fail on the `accounts_held_covered` check, and nothing of its transaction is kept.
 *
 * Only holds written with `reserve_at_commit` are reserved so: a process of the previous release, still running
 * during a rolling upgrade, raises `held` itself and writes the default (false), so no hold is counted twice.
 * Roll back (down) only after no process of this release runs: their holds would no longer raise `held`.
 */
export class HoldsReservedAtCommit1732300000011 implements MigrationInterface {
  name = 'HoldsReservedAtCommit1732300000011';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE spark_holds ADD COLUMN reserve_at_commit boolean NOT NULL DEFAULT false');
    await q.query(`
      CREATE FUNCTION spark_holds_reserve() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
      BEGIN
        UPDATE public.accounts SET held = held + NEW.amount, updated_at = now() WHERE id = NEW.account_id;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE CONSTRAINT TRIGGER spark_holds_reserved_at_commit AFTER INSERT ON spark_holds
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.status = 'held' AND NEW.reserve_at_commit) EXECUTE FUNCTION spark_holds_reserve()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER spark_holds_reserved_at_commit ON spark_holds');
    await q.query('DROP FUNCTION spark_holds_reserve()');
    await q.query('ALTER TABLE spark_holds DROP COLUMN reserve_at_commit');
  }
}
