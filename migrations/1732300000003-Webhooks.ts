import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: registered webhooks and the record of every delivery (registered or ad-hoc). A delivery is unique per
 * (action, event, target), so planning the deliveries of an outcome twice (a retried activity) plans them once;
 * its UUID is the `X-Service-Job-Id` receivers deduplicate on and the id of its Temporal workflow.
 */
export class Webhooks1732300000003 implements MigrationInterface {
  name = 'Webhooks1732300000003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhooks (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        url text NOT NULL,
        sealed_secret text NOT NULL,
        events text[] NOT NULL,
        is_active boolean NOT NULL DEFAULT true,
        deleted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhooks_account_live ON webhooks (account_id) WHERE deleted_at IS NULL`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id integer NOT NULL REFERENCES accounts(id),
        webhook_id integer REFERENCES webhooks(id),
        action_id integer NOT NULL REFERENCES actions(id),
        event text NOT NULL,
        url text NOT NULL,
        max_attempts integer NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'skipped')),
        attempts integer NOT NULL DEFAULT 0,
        last_status_code integer,
        last_error text,
        last_attempt_at timestamptz,
        delivered_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX webhook_deliveries_target ON webhook_deliveries (action_id, event, COALESCE(webhook_id, 0))`);
    await q.query(`CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhooks`);
  }
}
