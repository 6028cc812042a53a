import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: v2 jobs. A job wraps one action (its `resource_id`) and is the read model of the job workflow's own
 * lifecycle: status, phase, attempts, retryability and error. Only the workflow's activities move it (plus the
 * API's cancel of a job that is not running).
 */
export class Jobs1732300000004 implements MigrationInterface {
  name = 'Jobs1732300000004';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE jobs (
        id uuid PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        action_id integer NOT NULL UNIQUE REFERENCES actions(id),
        type text NOT NULL CHECK (type IN ('generation.execute', 'edit.execute')),
        status text NOT NULL CHECK (status IN ('queued', 'claimed', 'running', 'retry_scheduled', 'succeeded', 'failed', 'dead_letter', 'cancelled')),
        phase text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        retryable boolean NOT NULL DEFAULT false,
        error_code text,
        error_message text,
        next_attempt_at timestamptz,
        started_at timestamptz,
        completed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX jobs_account_created ON jobs (account_id, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE jobs`);
  }
}
