/**
 * Housekeeping: drops what is past its retention (see src/housekeeping/retention.ts and src/housekeeping/purge-inputs.ts)
 * and, since the `sandbox-top-up` patch, tops every sandbox's sparks up for the day (src/accounts/accounts.ts).
 * Started by the Temporal schedule `<task queue>-housekeeping` (src/housekeeping/schedule.ts), one run at a time
 * for the whole deployment however many worker processes run, each run visible in the Web UI with what it purged.
 */
import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { HousekeepingReport } from '../src/temporal/contract';

const steps = proxyActivities<Activities>({ startToCloseTimeout: '10 minutes', retry: { maximumAttempts: 3 } });


export async function housekeepingWorkflow(): Promise<HousekeepingReport> {
  const records = await steps.purgeExpiredRecords();
  const inputs = await steps.purgeStoredInputs();
  if (!patched('sandbox-top-up')) return { ...records, ...inputs };
  return { ...records, ...inputs, sandboxesToppedUp: await steps.topUpSandboxes() };
}
