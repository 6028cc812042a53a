/**
 * Uploads (`upl_` ids): an image checked and stored once, named by later requests within the hour. Every statement
 * on `uploads` but the housekeeping's purge (`src/housekeeping/purge-inputs.ts`) is here.
 */
import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { lockAccount } from '../accounts/accounts';
import { sqlRow } from '../db/sql';
import type { StoredImageFormat } from './image-limits';

export const UPLOAD_TTL_SECONDS = 3600;
export const MAX_ACTIVE_UPLOADS = 20;

export interface UploadRow { input_key: string; format: StoredImageFormat; width: number; height: number; expires_at: Date; account_id: number }

/** How many uploads of the account are active, and when the oldest of them expires. */
export async function activeUploads(m: EntityManager, accountId: number): Promise<{ n: number; oldest: Date | null }> {
  return (await sqlRow(m,
    'SELECT count(*)::int AS n, min(expires_at) AS oldest FROM uploads WHERE account_id = $1 AND expires_at > now()', [accountId]))!;
}

/**
 * Records an upload of a stored image, unless the account has MAX_ACTIVE_UPLOADS active (checked under the account's
 * lock, so the limit holds under concurrency): then answers when the oldest expires, and nothing is recorded.
 */
export async function recordUpload(
  db: DataSource, accountId: number, image: { key: string; format: StoredImageFormat; width: number; height: number },
): Promise<{ uploadId: string } | { full: Date }> {
  const uploadId = `upl_${randomBytes(18).toString('base64url')}`;
  return db.transaction(async (m) => {
    await lockAccount(m, accountId);
    const active = await activeUploads(m, accountId);
    if (active.n >= MAX_ACTIVE_UPLOADS) return { full: new Date(active.oldest!) };
    await m.query(
      `INSERT INTO uploads (id, account_id, input_key, format, width, height, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
      [uploadId, accountId, image.key, image.format, image.width, image.height, UPLOAD_TTL_SECONDS]);
    return { uploadId };
  });
}

/** An upload by id, or undefined. */
export function findUpload(db: DataSource, uploadId: string): Promise<UploadRow | undefined> {
  return sqlRow<UploadRow>(db.manager, 'SELECT input_key, format, width, height, expires_at, account_id FROM uploads WHERE id = $1', [uploadId]);
}
