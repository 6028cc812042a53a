import { MigrationInterface, QueryRunner } from 'typeorm';

/** Why: `POST /upload` gives an `upl_` id that stands for an image for one hour (at most 20 active per account). */
export class Uploads1732300000002 implements MigrationInterface {
  name = 'Uploads1732300000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE uploads (
        id text PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        input_key text NOT NULL,
        format text NOT NULL,
        width integer NOT NULL,
        height integer NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX uploads_account_expires ON uploads (account_id, expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE uploads`);
  }
}
