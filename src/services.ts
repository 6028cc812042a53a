import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Config } from './config';
import type { Providers } from './providers';
import type { AssetStore } from './storage/asset-store';
import type { UrlSigner } from './storage/signed-urls';
import type { OutboundPolicy } from './net/outbound';
import type { SecretBox } from './secrets';
import type { DefaultGrouping } from './db/entities/api-key';
import type { SandboxScenario } from './providers/sandbox';

/** What the use cases of `src/` are given, built once at start by the composition root (`app/main.ts`). */
export interface Services {
  config: Pick<Config, 'rateLimitPerMinute' | 'taskQueue' | 'publicBaseUrl' | 'webhookRetryInitialMs' | 'jobMaxAttempts' | 'jobRetryBackoffMs'>
    /**
     * `FUNNEL_IDLE_TIMEOUT_SECONDS`, `ASSET_DELIVERY`, `S3_PRESIGN_SECONDS`, `HTTP_IDLE_TIMEOUT_SECONDS`, the
     * dashboard's settings and `SANDBOX_SPARKS` (left out: a day, `redirect`, 300, 30, DEFAULT_DASHBOARD_SETTINGS and
     * 1,000, as in `loadConfig`).
     */
    & Partial<Pick<Config, 'funnelIdleTimeoutSeconds' | 'assetDelivery' | 's3PresignSeconds' | 'httpIdleTimeoutSeconds' | 'dashboard' | 'sandboxSparks'>>;
  db: DataSource;
  temporal: Client;
  store: AssetStore;
  signer: UrlSigner;
  /** The text provider answers analysis and the helpers; the others give polling hints and availability. */
  providers: Providers;
  /** Fetches of image URLs (and later webhook deliveries) go through this policy. */
  outbound: OutboundPolicy;
  /** Seals webhook secrets for storage. */
  secrets: SecretBox;
}

/** Who is calling: set by the auth middleware on `ctx.state.caller`. */
export interface Caller {
  accountId: number;
  keyId: number;
  keyName: string;
  defaultGrouping: DefaultGrouping;
  /**
   * The account's sparks available (balance - held) when the request arrived, read with its key: a request whose
   * price is beyond it (and beyond a fresh read) is refused before anything is written. The hold made at commit
   * stays the guarantee.
   */
  availableOnArrival: number;
  /**
   * A test key (`ak_test_`): the account is the sandbox of a live one, and its work runs on the sandbox renderer.
   * `scenario`: the failure drill its request asked for (`X-Sandbox-Scenario`).
   */
  sandbox?: { scenario?: SandboxScenario };
}
