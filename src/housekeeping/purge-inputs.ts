/**
 * Housekeeping of stored inputs, run periodically by every worker process: deletes upload rows expired for longer
 * than the grace period, and input files last written longer ago than it that no action and no live upload names.
 * The grace covers an upload's file, which is stored just before its row is inserted; a generation's inputs are
 * stored only after the action that names them is committed. Safe to run anywhere, any number of times.
 *
 * Not atomic: an action committed between a file's reference check and its deletion that re-stores the same
 * content (keys are content hashes) in that window of milliseconds would lose it; its render then fails.
 */
import type { DataSource } from 'typeorm';
import { log } from '../log';
import type { AssetStore } from '../storage/asset-store';

export const INPUT_GRACE_MS = 60 * 60_000;
const BATCH_SIZE = 500;

/**
 * The keys among `keys` that a live upload, any value in an action's params (GIN index on params), a batch item
 * waiting its turn (its pinned uploads), or a funnel session that has not ended (its photos and setup references) names.
 */
async function stillReferenced(db: DataSource, keys: string[]): Promise<Set<string>> {
  const rows: { key: string }[] = await db.query(
    `SELECT k AS key FROM unnest($1::text[]) AS k
      WHERE EXISTS (SELECT 1 FROM uploads WHERE input_key = k AND expires_at > now())
         OR EXISTS (SELECT 1 FROM actions WHERE params @? format('$.** ? (@ == %s)', to_json(k))::jsonpath)
         OR EXISTS (SELECT 1 FROM batch_items WHERE status = 'pending' AND request @? format('$.** ? (@ == %s)', to_json(k))::jsonpath)
         OR EXISTS (SELECT 1 FROM funnels WHERE status <> 'expired' AND inputs @> jsonb_build_array(k))
         OR EXISTS (SELECT 1 FROM funnels WHERE status <> 'expired' AND setup @? format('$.** ? (@ == %s)', to_json(k))::jsonpath)`, [keys]);
  return new Set(rows.map((row) => row.key));
}

export async function purgeUnreferencedInputs(
  db: DataSource, store: AssetStore, graceMs = INPUT_GRACE_MS,
): Promise<{ uploads: number; inputs: number }> {
  const [, uploads] = await db.query(`DELETE FROM uploads WHERE expires_at < now() - make_interval(secs => $1)`, [graceMs / 1000]);
  const writtenBefore = Date.now() - graceMs;
  let inputs = 0;
  let candidates: string[] = [];
  const deleteUnreferenced = async () => {
    const keep = await stillReferenced(db, candidates);
    for (const key of candidates.filter((k) => !keep.has(k))) {
      // Asked again just before deleting, so the window in which a new action can name it is one statement long.
      if ((await stillReferenced(db, [key])).size > 0) continue;
      await store.delete(key);
      inputs++;
    }
    candidates = [];
  };
  for await (const object of store.list('inputs/')) {
    if (object.lastModified.getTime() < writtenBefore) candidates.push(object.key);
    if (candidates.length === BATCH_SIZE) await deleteUnreferenced();
  }
  if (candidates.length > 0) await deleteUnreferenced();
  if (uploads > 0 || inputs > 0) log.info('purged stored inputs', { expiredUploads: uploads, inputFiles: inputs });
  return { uploads, inputs };
}
