import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: ids are taken ahead from their sequences, a block at a time per process (src/db/id-blocks.ts), so with several
 * API processes an id no longer says what was made first; lists that promise "newest first" or "oldest first" order
 * by `created_at` (the id breaking ties), and these indexes keep them from sorting:
 * - `GET /projects` (an account's projects by source, newest first), replacing the index by id;
 * - a project's actions (`GET /projects/{id}`), which had no index by project at all.
 */
export class CreationOrderIndexes1732300000018 implements MigrationInterface {
  name = 'CreationOrderIndexes1732300000018';
  /** Built CONCURRENTLY (outside a transaction), so that rows are written meanwhile during a rolling upgrade. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query('CREATE INDEX CONCURRENTLY IF NOT EXISTS projects_account_source_created ON projects (account_id, source, created_at DESC, id DESC)');
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS projects_account_source');
    await q.query('CREATE INDEX CONCURRENTLY IF NOT EXISTS actions_project_created ON actions (project_id, created_at, id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS actions_project_created');
    await q.query('CREATE INDEX CONCURRENTLY IF NOT EXISTS projects_account_source ON projects (account_id, source, id DESC)');
    await q.query('DROP INDEX CONCURRENTLY IF EXISTS projects_account_source_created');
  }
}
