import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: an action is accepted only once its workflow has started. `start_state` is `starting` from the request's
 * commit until the API confirms the start (`started`), or until the sweep gives up on a start that never happened
 * (`abandoned`: hold released, action failed, nothing ever runs). Rows from before default to `started`.
 * `idempotency_keys.action_id` lets a repeat of an Idempotency-Key see whether the first request's start is still
 * in flight. The partial index keeps the reconciler's scan of open actions cheap.
 */
export class StartStates1732300000005 implements MigrationInterface {
  name = 'StartStates1732300000005';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE actions ADD COLUMN start_state text NOT NULL DEFAULT 'started'
                     CHECK (start_state IN ('starting', 'started', 'abandoned'))`);
    await q.query(`CREATE INDEX actions_open ON actions (created_at) WHERE status IN ('pending', 'processing')`);
    await q.query(`CREATE INDEX actions_starting ON actions (created_at) WHERE start_state = 'starting'`);
    await q.query(`ALTER TABLE idempotency_keys ADD COLUMN action_id integer REFERENCES actions(id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_keys DROP COLUMN action_id`);
    await q.query(`DROP INDEX actions_starting`);
    await q.query(`DROP INDEX actions_open`);
    await q.query(`ALTER TABLE actions DROP COLUMN start_state`);
  }
}
