import type { DataSource } from 'typeorm';
import type { Providers } from '../src/providers';
import type { AssetStore } from '../src/storage/asset-store';
import type { OutboundPolicy } from '../src/net/outbound';
import type { SecretBox } from '../src/secrets';
import type { Config } from '../src/config';
import type { BatchLimits } from '../src/batches/run';

/** What activities are built from (the dependency-injection pattern of the Temporal samples). */
export interface ActivityDeps {
  db: DataSource;
  store: AssetStore;
  providers: Providers;
  outbound: OutboundPolicy;
  secrets: SecretBox;
  webhookRetryInitialMs: number;
  /** What a batch's items are accepted with: the task queue their routes start from and their jobs' attempts. */
  config: Pick<Config, 'taskQueue' | 'jobMaxAttempts' | 'jobRetryBackoffMs'>;
  /** How many items of a batch, and of an account's batches together, run at once. */
  batchLimits: BatchLimits;
  /** What housekeeping tops each sandbox up to every day (SANDBOX_SPARKS; DEFAULT_SANDBOX_SPARKS when left out). */
  sandboxSparks?: number;
}
