import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: every minute the reconciler looks for completed and failed actions of the last day that no workflow announced, and
 * for pending webhook deliveries whose workflow stopped (src/actions/reconcile.ts); these partial indexes find
 * them without reading every action or delivery ever made.
 */
export class ReconcilerIndexes1732300000014 implements MigrationInterface {
  name = 'ReconcilerIndexes1732300000014';
  /** Built CONCURRENTLY (outside a transaction), so that actions and deliveries are written meanwhile during a rolling upgrade. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    // One index for both outcomes: the query's `status IN ('completed', 'failed')` matches its predicate exactly
    // (the planner does not split the list over two partial indexes). It replaces `actions_completed` (0013).
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS actions_ended ON actions (completed_at) WHERE status IN ('completed', 'failed')`);
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS actions_completed');
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (created_at) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_pending');
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS actions_completed ON actions (completed_at) WHERE status = 'completed'`);
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS actions_ended');
  }
}
