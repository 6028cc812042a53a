import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { ActionProduct, ActionType } from '../db/entities/action';
import type { JobType } from '../domain/jobs';
import { log } from '../log';
import { startActionWorkflow, startJobWorkflow } from './start-action';

export interface RecoveryConfig { taskQueue: string; jobMaxAttempts: number; jobRetryBackoffMs: number }

/**
 * Starts the workflow of any action or job left waiting without one (an API process that died between its commit
 * and the workflow start). Safe to run any time: workflow ids are derived from actions and jobs and never reused,
 * so a workflow that exists is found, not doubled. A v2 job's action belongs to its job workflow only.
 */
export async function recoverPendingActions(db: DataSource, client: Client, config: RecoveryConfig, olderThanSeconds = 30): Promise<number> {
  const actions: { id: number; account_id: number; type: ActionType; product: ActionProduct }[] = await db.query(
    `SELECT id, account_id, type, product FROM actions a
      WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.action_id = a.id)
      ORDER BY id LIMIT 1000`, [olderThanSeconds]);
  for (const action of actions) {
    await startActionWorkflow(client, config.taskQueue, { id: action.id, accountId: action.account_id, type: action.type, product: action.product });
  }
  const jobs: { id: string; account_id: number; action_id: number; type: JobType }[] = await db.query(
    `SELECT id, account_id, action_id, type FROM jobs
      WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT 1000`, [olderThanSeconds]);
  for (const job of jobs) {
    await startJobWorkflow(client, config, { jobId: job.id, type: job.type, actionId: job.action_id, accountId: job.account_id });
  }
  const count = actions.length + jobs.length;
  if (count > 0) log.info('checked waiting actions and jobs for missing workflows', { actions: actions.length, jobs: jobs.length });
  return count;
}
