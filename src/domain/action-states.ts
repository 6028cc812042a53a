/** Closing moves of an action's read model, shared by the workflow's activities and the API's cancel. */
import type { EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';

type OpenStatus = 'pending' | 'processing';

/**
 * Ends an action without a result (failed or cancelled) if it is still in one of `from`; answers whether it
 * moved. Its card shows the outcome only while the card has no completed version. Spark holds are the caller's
 * business (settle them in the same transaction).
 */
export async function closeAction(
  m: EntityManager, actionId: number, status: 'failed' | 'cancelled', errorMessage: string | null,
  from: OpenStatus[] = ['pending', 'processing'],
): Promise<boolean> {
  const closed = await sqlRow(m,
    `UPDATE actions SET status = $2, error_message = $3, completed_at = now(), updated_at = now()
      WHERE id = $1 AND status = ANY($4) RETURNING card_id`, [actionId, status, errorMessage, from]);
  if (closed) {
    await m.query(`UPDATE cards SET status = $2, updated_at = now() WHERE id = $1 AND active_action_id IS NULL`, [closed.card_id, status]);
  }
  return Boolean(closed);
}
