import type { DataSource } from 'typeorm';
import type { Providers } from '../src/providers';
import type { AssetStore } from '../src/storage/asset-store';
import type { OutboundPolicy } from '../src/net/outbound';
import type { SecretBox } from '../src/secrets';

/** What activities are built from (the dependency-injection pattern of the Temporal samples). */
export interface ActivityDeps {
  db: DataSource;
  store: AssetStore;
  providers: Providers;
  outbound: OutboundPolicy;
  secrets: SecretBox;
  webhookRetryInitialMs: number;
  /** What housekeeping tops each sandbox up to every day (SANDBOX_SPARKS; DEFAULT_SANDBOX_SPARKS when left out). */
  sandboxSparks?: number;
}
