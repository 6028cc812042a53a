/** The reads of v2 jobs that the API's views make (the writes are `lifecycle.ts`'s). */
import type { DataSource } from 'typeorm';
import type { HoldStatus } from '../db/entities/spark-hold';
import { prepared, preparedRow } from '../db/prepared';
import type { JobStatus, JobType } from './lifecycle';

/** A job and what its answers need of its action, by the two primary keys; only the columns of JobRow. */
const JOB_WITH_ACTION = prepared('job_with_action', `
  SELECT j.id, j.account_id, j.action_id, j.type, j.status, j.phase, j.retryable, j.error_code, j.error_message,
         j.next_attempt_at, j.created_at, j.started_at, j.completed_at, j.updated_at,
         a.asset_path, a.card_id, a.project_id, a.product, a.price, h.status AS hold_status, h.amount AS hold_amount
    FROM jobs j JOIN actions a ON a.id = j.action_id LEFT JOIN spark_holds h ON h.action_id = j.action_id WHERE j.id = $1`);

export interface JobRow {
  id: string; account_id: number; action_id: number; type: JobType; status: JobStatus; phase: string; retryable: boolean;
  error_code: string | null; error_message: string | null; next_attempt_at: Date | null; created_at: Date; started_at: Date | null;
  completed_at: Date | null; updated_at: Date; asset_path: string | null; card_id: number; project_id: number; product: 'photo' | 'edit';
  price: number; hold_status: HoldStatus | null; hold_amount: number | null;
}

/** A job with what its answers need of its action and hold, or undefined. */
export function readJob(db: DataSource, jobId: string): Promise<JobRow | undefined> {
  return preparedRow<JobRow>(db, JOB_WITH_ACTION, [jobId]);
}
