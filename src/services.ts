import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Config } from './config';
import type { Providers } from './providers';
import type { AssetStore } from './storage/asset-store';
import type { UrlSigner } from './storage/signed-urls';
import type { OutboundPolicy } from './net/outbound';
import type { SecretBox } from './secrets';
import type { DefaultGrouping } from './db/entities/api-key';

/** What the use cases of `src/` are given, built once at start by the composition root (`app/main.ts`). */
export interface Services {
  config: Pick<Config, 'rateLimitPerMinute' | 'taskQueue' | 'publicBaseUrl' | 'webhookRetryInitialMs' | 'jobMaxAttempts' | 'jobRetryBackoffMs'>
    /**
     * `FUNNEL_IDLE_TIMEOUT_SECONDS`, `ASSET_DELIVERY`, `S3_PRESIGN_SECONDS`, `HTTP_IDLE_TIMEOUT_SECONDS` and the
     * dashboard's settings (left out: a day, `redirect`, 300, 30 and DEFAULT_DASHBOARD_SETTINGS, as in `loadConfig`).
     */
    & Partial<Pick<Config, 'funnelIdleTimeoutSeconds' | 'assetDelivery' | 's3PresignSeconds' | 'httpIdleTimeoutSeconds' | 'dashboard'>>;
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
}
