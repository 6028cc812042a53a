/**
 * Housekeeping: drops what is past its retention (see src/domain/retention.ts and src/storage/purge-inputs.ts).
 * Started by the Temporal schedule `<task queue>-housekeeping` (src/temporal/housekeeping.ts), one run at a time
 * for the whole deployment however many worker processes run, each run visible in the Web UI with what it purged.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PurgedRecords } from '../src/domain/retention';

const steps = proxyActivities<Activities>({ startToCloseTimeout: '10 minutes', retry: { maximumAttempts: 3 } });

export type HousekeepingReport = PurgedRecords & { uploads: number; inputs: number };

export async function housekeepingWorkflow(): Promise<HousekeepingReport> {
  const records = await steps.purgeExpiredRecords();
  const inputs = await steps.purgeStoredInputs();
  return { ...records, ...inputs };
}
