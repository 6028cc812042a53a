import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the metrics scrape counts open spark holds and the age of the oldest (an alert fires on holds open longer
 * than an hour, src/metrics/database-gauges.ts); this partial index answers that from the few open holds, never
 * from every hold ever made.
 */
export class OpenHoldsIndex1732300000016 implements MigrationInterface {
  name = 'OpenHoldsIndex1732300000016';
  /** Built CONCURRENTLY (outside a transaction), so that holds are written meanwhile during a rolling upgrade. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS spark_holds_open ON spark_holds (created_at) WHERE status = 'held'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS spark_holds_open');
  }
}
