import { Column, Entity, Index } from 'typeorm';
import { BaseRecord } from './base';

export type DefaultGrouping = 'api_key_inbox' | 'legacy_per_request';

/** An API key; only the SHA-256 of the secret is stored. Index: InitialSchema (unique key_hash). */
@Entity('api_keys')
export class ApiKey extends BaseRecord {
  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  @Column({ type: 'text' })
  name: string;

  @Index({ unique: true })
  @Column({ name: 'key_hash', type: 'text' })
  keyHash: string;

  /** The first characters of the key, shown by `key:list` so an operator can tell keys apart. */
  @Column({ type: 'text' })
  prefix: string;

  @Column({ name: 'default_grouping', type: 'text' })
  defaultGrouping: DefaultGrouping;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  /** The first request of each rate-limit window sets it (api/middleware/counted-key-lookup.ts). Migration: DashboardUsers. */
  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  /** Sparks this key may hold or have charged per calendar month (UTC); null: no limit. Migration: KeySpendLimits. */
  @Column({ name: 'monthly_spend_limit', type: 'integer', nullable: true })
  monthlySpendLimit: number | null;
}
