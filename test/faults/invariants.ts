/**
 * The checker every fault scenario ends with: the money and the read models against the ledger and the workflows
 * (no open action without its workflow, no workflow left running for a closed action), and each key's monthly
 * spend against its holds.
 * Answers the violations it found (empty when every invariant holds) and the counts the suite's table shows.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { actionWorkflowId, jobWorkflowId, SEARCH_ATTRIBUTES } from '../../src/temporal/contract';
import { workflowState } from '../../src/temporal/workflow-state';
import { moneyOf } from '../support/fixtures';

export interface Checked {
  violations: string[];
  /** Completed actions charged more than once, or charged and released. */
  doubleCharged: number;
}

/**
 * Running action or job workflows (found through visibility, confirmed by describing each: visibility may lag) of
 * these actions whose action is closed, or of actions that do not exist.
 */
async function orphanWorkflows(temporal: Client, actions: { id: number; status: string }[]): Promise<string[]> {
  if (actions.length === 0) return [];
  const status = new Map(actions.map((x) => [x.id, x.status]));
  const found: string[] = [];
  // An action's workflow is found by its id (action-<id>), a job's by its ActionId search attribute.
  const ids = actions.map((x) => x.id);
  const query = `ExecutionStatus = 'Running' AND (WorkflowId IN (${ids.map((id) => `'${actionWorkflowId(id)}'`).join(', ')}) OR ActionId IN (${ids.join(', ')}))`;
  for await (const wf of temporal.workflow.list({ query })) {
    if (!/^(action|job)-/.test(wf.workflowId)) continue; // deliveries and announcements outlive their action by design
    const actionId = wf.workflowId.startsWith('action-') ? Number(wf.workflowId.slice('action-'.length)) : Number(wf.typedSearchAttributes.get(SEARCH_ATTRIBUTES.actionId));
    const open = ['pending', 'processing'].includes(status.get(actionId) ?? '');
    if (open) continue;
    const state = await workflowState(temporal, wf.workflowId);
    if (state.kind === 'running') found.push(`workflow ${wf.workflowId} runs for action ${actionId}, which is ${status.get(actionId) ?? 'missing'}`);
  }
  return found;
}

/** Each key's monthly spend (`key_spend`) against what it holds or had charged that month (UTC): equal, whatever failed. */
async function keySpendMismatches(db: DataSource, accountIds: number[]): Promise<string[]> {
  const rows: { key_id: number; month: string; holds: number; spent: number }[] = await db.query(`
    WITH holds AS (
      SELECT key_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, SUM(amount)::int AS sparks FROM spark_holds
       WHERE account_id = ANY($1) AND key_id IS NOT NULL AND status IN ('held', 'charged') GROUP BY 1, 2
    ), spend AS (
      SELECT s.key_id, s.month, s.sparks FROM key_spend s JOIN api_keys k ON k.id = s.key_id WHERE k.account_id = ANY($1)
    )
    SELECT COALESCE(h.key_id, s.key_id) AS key_id, COALESCE(h.month, s.month)::text AS month,
           COALESCE(h.sparks, 0) AS holds, COALESCE(s.sparks, 0) AS spent
      FROM holds h FULL JOIN spend s ON s.key_id = h.key_id AND s.month = h.month
     WHERE COALESCE(h.sparks, 0) <> COALESCE(s.sparks, 0)`, [accountIds]);
  return rows.map((r) => `key ${r.key_id}: ${r.month} spend ${r.spent}, but its holds held or charged then are ${r.holds}`);
}

export async function checkInvariants(db: DataSource, temporal: Client, assetsDir: string, accountIds: number[]): Promise<Checked> {
  const violations: string[] = [];
  const accounts = await moneyOf(db, accountIds);
  for (const a of accounts) {
    if (a.balance !== a.ledger) violations.push(`account ${a.id}: balance ${a.balance} is not grants - charges ${a.ledger}`);
    if (a.held !== a.open_holds) violations.push(`account ${a.id}: held ${a.held} is not the sum of open holds ${a.open_holds}`);
  }
  const actions: { id: number; status: string; asset_path: string | null; hold: string | null; charges: number; job_id: string | null }[] = await db.query(
    `SELECT x.id, x.status, x.asset_path, h.status AS hold, j.id AS job_id,
            (SELECT count(*)::int FROM spark_ledger l WHERE l.action_id = x.id AND l.kind = 'charge') AS charges
       FROM actions x LEFT JOIN spark_holds h ON h.action_id = x.id LEFT JOIN jobs j ON j.action_id = x.id
      WHERE x.account_id = ANY($1) ORDER BY x.id`, [accountIds]);
  let doubleCharged = 0;
  for (const x of actions) {
    const open = x.status === 'pending' || x.status === 'processing';
    if (x.charges > 1 || (x.charges > 0 && x.hold === 'released')) doubleCharged++;
    if (x.status === 'completed' && (x.charges !== 1 || x.hold !== 'charged')) violations.push(`action ${x.id}: completed with ${x.charges} charges, hold ${x.hold}`);
    if (['failed', 'cancelled'].includes(x.status) && (x.charges !== 0 || x.hold === 'held')) violations.push(`action ${x.id}: ${x.status} with ${x.charges} charges, hold ${x.hold}`);
    if (open && x.hold !== 'held') violations.push(`action ${x.id}: open with hold ${x.hold}`);
    if (x.status === 'completed' && (!x.asset_path || !existsSync(path.join(assetsDir, x.asset_path)))) violations.push(`action ${x.id}: its result ${x.asset_path} is not stored`);
    const state = await workflowState(temporal, x.job_id ? jobWorkflowId(x.job_id) : actionWorkflowId(x.id));
    if (open && state.kind !== 'running') violations.push(`action ${x.id}: open, its workflow is ${state.kind}`);
    if (!open && state.kind === 'running') violations.push(`action ${x.id}: ${x.status}, its workflow still runs`);
  }
  violations.push(...await orphanWorkflows(temporal, actions));
  violations.push(...await keySpendMismatches(db, accountIds));
  return { violations, doubleCharged };
}
