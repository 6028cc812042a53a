import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the housekeeping workflow drops finished webhook deliveries after their retention period (see
 * src/housekeeping/retention.ts); this partial index finds them without reading the pending ones or the whole table.
 */
export class RetentionIndexes1732300000012 implements MigrationInterface {
  name = 'RetentionIndexes1732300000012';
  /** Built CONCURRENTLY (outside a transaction), so that deliveries are written meanwhile during a rolling upgrade. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (created_at) WHERE status <> 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_finished');
  }
}
