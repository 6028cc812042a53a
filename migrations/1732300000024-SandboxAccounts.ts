import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: sandbox keys (`ak_test_...`). An account's sandbox is an account row of its own, `sandbox_of` naming the live
 * account (one sandbox per account, made with its first test key). Test keys belong to it, so everything that is
 * scoped by account (sparks and their ledger, actions, jobs, projects, uploads, webhooks, the event feed, rate
 * limits) keeps sandbox and live apart without a filter anywhere: a live key never finds a sandbox resource, and
 * the other way round. Its sparks are granted by the service (1,000 at first, topped up daily by housekeeping).
 */
export class SandboxAccounts1732300000024 implements MigrationInterface {
  name = 'SandboxAccounts1732300000024';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE accounts ADD COLUMN IF NOT EXISTS sandbox_of integer UNIQUE REFERENCES accounts(id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE accounts DROP COLUMN IF EXISTS sandbox_of');
  }
}
