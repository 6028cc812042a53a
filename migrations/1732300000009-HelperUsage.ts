import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the AI helpers are counted per account and UTC day (100 free calls, then 1 spark per started block of 20).
 * `helper_usage` holds the day's succeeded calls (`used`) and the calls in flight (`pending`); each call in flight
 * is a `helper_reservations` row, so finishing it (or expiring it after a crash) happens once. The spark of a paid
 * block is held while the block has no succeeded call yet: such a hold belongs to no action, so `spark_holds` gets
 * a `reference` instead (one open hold per reference).
 */
export class HelperUsage1732300000009 implements MigrationInterface {
  name = 'HelperUsage1732300000009';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE helper_usage (
        account_id integer NOT NULL REFERENCES accounts(id),
        day date NOT NULL,
        used integer NOT NULL DEFAULT 0 CHECK (used >= 0),
        pending integer NOT NULL DEFAULT 0 CHECK (pending >= 0),
        PRIMARY KEY (account_id, day)
      )`);
    await q.query(`
      CREATE TABLE helper_reservations (
        id bigserial PRIMARY KEY,
        account_id integer NOT NULL,
        day date NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        FOREIGN KEY (account_id, day) REFERENCES helper_usage (account_id, day)
      )`);
    await q.query(`CREATE INDEX helper_reservations_created ON helper_reservations (created_at)`);
    await q.query(`ALTER TABLE spark_holds ALTER COLUMN action_id DROP NOT NULL`);
    await q.query(`ALTER TABLE spark_holds ADD COLUMN reference text`);
    await q.query(`ALTER TABLE spark_holds ADD CONSTRAINT spark_holds_owner CHECK ((action_id IS NULL) <> (reference IS NULL))`);
    await q.query(`CREATE UNIQUE INDEX spark_holds_open_reference ON spark_holds (reference) WHERE status = 'held'`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Refuses (NOT NULL fails) while a helper block is still held; settled ones go, their charges stay in the ledger.
    await q.query(`DELETE FROM spark_holds WHERE reference IS NOT NULL AND status <> 'held'`);
    await q.query(`DROP INDEX spark_holds_open_reference`);
    await q.query(`ALTER TABLE spark_holds DROP CONSTRAINT spark_holds_owner`);
    await q.query(`ALTER TABLE spark_holds DROP COLUMN reference`);
    await q.query(`ALTER TABLE spark_holds ALTER COLUMN action_id SET NOT NULL`);
    await q.query(`DROP TABLE helper_reservations`);
    await q.query(`DROP TABLE helper_usage`);
  }
}
