import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: lists show results small (the dashboard's gallery, `thumb_url` in the API). A render of an image stores a
 * WebP thumbnail beside each result it stores (`src/media/thumbnails.ts`: the result's key with `.thumb.webp`), and
 * says so here; results stored before, and videos, have none. A column with a constant default is added without
 * rewriting the table (Postgres 11 and later): `actions` is taken for an instant only.
 */
export class ActionThumbnails1732300000021 implements MigrationInterface {
  name = 'ActionThumbnails1732300000021';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE actions ADD COLUMN IF NOT EXISTS has_thumbnail boolean NOT NULL DEFAULT false');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE actions DROP COLUMN IF EXISTS has_thumbnail');
  }
}
