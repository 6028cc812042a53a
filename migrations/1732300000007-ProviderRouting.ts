import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: provider routing. The provider chosen for an action (and its v2 job) is recorded when it is accepted, and
 * its calls run on that provider's task queue. A remote video render is a provider task polled on workflow
 * timers: its id is recorded once submitted, so a retried or restarted submit never sends a second one.
 */
export class ProviderRouting1732300000007 implements MigrationInterface {
  name = 'ProviderRouting1732300000007';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE actions ADD COLUMN provider text, ADD COLUMN provider_task_id text`);
    await q.query(`ALTER TABLE jobs ADD COLUMN provider text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs DROP COLUMN provider`);
    await q.query(`ALTER TABLE actions DROP COLUMN provider, DROP COLUMN provider_task_id`);
  }
}
