/**
 * Housekeeping steps, run by the housekeeping workflow on its schedule: records past their retention, then stored
 * inputs nothing names any more, then the sandboxes' daily top-up. Each is safe to run anywhere, any number of times.
 */
import { purgeExpiredRecords, type PurgedRecords } from '../src/housekeeping/retention';
import { purgeUnreferencedInputs } from '../src/housekeeping/purge-inputs';
import { topUpSandboxes } from '../src/accounts/accounts';
import { DEFAULT_SANDBOX_SPARKS } from '../src/config';
import type { ActivityDeps } from './deps';

export function createHousekeepingActivities({ db, store, sandboxSparks = DEFAULT_SANDBOX_SPARKS }: ActivityDeps) {
  return {
    /** Every sandbox's sparks topped up to SANDBOX_SPARKS, once per UTC day. */
    async topUpSandboxes(): Promise<number> {
      return topUpSandboxes(db, sandboxSparks);
    },

    /** Idempotency-Key answers, rate-limit windows and finished webhook deliveries past their retention. */
    async purgeExpiredRecords(): Promise<PurgedRecords> {
      return purgeExpiredRecords(db);
    },

    /** Expired upload rows, and input files that no action, live upload or open funnel names. */
    async purgeStoredInputs(): Promise<{ uploads: number; inputs: number }> {
      return purgeUnreferencedInputs(db, store);
    },
  };
}
