/** The reads of v2 jobs that the API's views make (the writes are `lifecycle.ts`'s). */
import type { DataSource } from 'typeorm';
import type { HoldStatus } from '../db/entities/spark-hold';
import { prepared } from '../db/prepared';
import { batchedRows } from '../db/batcher';
import type { JobStatus, JobType } from './lifecycle';

/** Jobs and what their answers need of their actions, by primary key; only the columns of JobRow. */
const JOBS_WITH_ACTIONS = prepared('jobs_with_actions', `
  SELECT j.id, j.account_id, j.action_id, j.type, j.status, j.phase, j.retryable, j.error_code, j.error_message,
         j.next_attempt_at, j.created_at, j.started_at, j.completed_at, j.updated_at,
         a.asset_path, a.card_id, a.project_id, a.product, a.price, h.status AS hold_status, h.amount AS hold_amount
    FROM jobs j JOIN actions a ON a.id = j.action_id LEFT JOIN spark_holds h ON h.action_id = j.action_id WHERE j.id = ANY($1::uuid[])`);

export interface JobRow {
  id: string; account_id: number; action_id: number; type: JobType; status: JobStatus; phase: string; retryable: boolean;
  error_code: string | null; error_message: string | null; next_attempt_at: Date | null; created_at: Date; started_at: Date | null;
  completed_at: Date | null; updated_at: Date; asset_path: string | null; card_id: number; project_id: number; product: 'photo' | 'edit';
  price: number; hold_status: HoldStatus | null; hold_amount: number | null;
}

/**
 * A job with what its answers need of its action and hold, or undefined; the reads of polls that arrive together are
 * one statement (batchedRows). The id must be a UUID (the route checks it); it is matched in lower case, as
 * Postgres writes it.
 */
export function jobReader(db: DataSource): (jobId: string) => Promise<Readonly<JobRow> | undefined> {
  const read = batchedRows<string, JobRow>(db, JOBS_WITH_ACTIONS, 'id');
  return (jobId) => read(jobId.toLowerCase());
}
