import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: every minute the reconciler looks for completed actions of the last day that no workflow announced
 * (src/actions/reconcile.ts); this partial index finds them without reading every action ever made.
 */
export class CompletedActionsIndex1732300000013 implements MigrationInterface {
  name = 'CompletedActionsIndex1732300000013';
  /** Built CONCURRENTLY (outside a transaction), so that actions are written meanwhile during a rolling upgrade. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS actions_completed ON actions (completed_at) WHERE status = 'completed'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS actions_completed');
  }
}
