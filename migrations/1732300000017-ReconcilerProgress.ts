import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: a reconciler pass must cost the same on a database of a million actions as on a new one.
 * - `reconciler_progress`: how far a pass has looked (its horizon), so that the next one reads only what completed
 *   since, not a whole day of completions every minute (src/actions/reconcile.ts, announceUnannouncedOutcomes);
 * - `jobs_live`: the jobs not ended yet, so that looking for lost job workflows reads those few, not every job ever made.
 */
export class ReconcilerProgress1732300000017 implements MigrationInterface {
  name = 'ReconcilerProgress1732300000017';
  /** The index is built CONCURRENTLY (outside a transaction), so that jobs are written meanwhile during a rolling upgrade. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS reconciler_progress (pass text PRIMARY KEY, horizon timestamptz NOT NULL)`);
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_live ON jobs (created_at)
                    WHERE status IN ('queued', 'claimed', 'running', 'retry_scheduled')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS jobs_live');
    await q.query('DROP TABLE IF EXISTS reconciler_progress');
  }
}
