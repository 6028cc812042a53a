import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: batches yield to interactive traffic (src/batches/interactive-demand.ts). Each API process writes, twice a
 * second while it serves interactive requests, how many it had in flight on average; a batch's step reads the sum
 * of the fresh rows. UNLOGGED (as `rate_limit_windows`): a reading is worth nothing after a crash and must be cheap
 * to write. A new table that nothing else reads: safe during a rolling upgrade (an API of the release before writes
 * nothing, and batches then do not yield to it).
 */
export class InteractiveDemand1732300000027 implements MigrationInterface {
  name = 'InteractiveDemand1732300000027';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE UNLOGGED TABLE IF NOT EXISTS interactive_demand (
        process text PRIMARY KEY,
        demand real NOT NULL CHECK (demand >= 0),
        at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS interactive_demand`);
  }
}
