import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: `Idempotency-Key` on generation requests. One row per (account, scope, key) holds the first response; the
 * primary key makes concurrent duplicates wait for the first transaction and then read its answer.
 */
export class IdempotencyKeys1732300000001 implements MigrationInterface {
  name = 'IdempotencyKeys1732300000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE idempotency_keys (
        account_id integer NOT NULL REFERENCES accounts(id),
        scope text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        response_status integer NOT NULL,
        response_body jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, scope, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
  }
}
