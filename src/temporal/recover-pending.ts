import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { log } from '../log';
import { startActionWorkflow } from './start-action';
import type { ActionProduct, ActionType } from '../db/entities/action';

/**
 * Starts the workflow of any action left `pending` without one (an API process that died between its commit and
 * the workflow start). Safe to run any time: workflow ids are derived from actions and never reused.
 */
export async function recoverPendingActions(db: DataSource, client: Client, taskQueue: string, olderThanSeconds = 30): Promise<number> {
  const stale: { id: number; account_id: number; type: ActionType; product: ActionProduct }[] = await db.query(
    `SELECT id, account_id, type, product FROM actions WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT 1000`,
    [olderThanSeconds]);
  for (const action of stale) {
    await startActionWorkflow(client, taskQueue, { id: action.id, accountId: action.account_id, type: action.type, product: action.product });
  }
  if (stale.length > 0) log.info('checked pending actions for missing workflows', { count: stale.length });
  return stale.length;
}
