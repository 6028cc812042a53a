import { Column, Entity } from 'typeorm';
import { BaseRecord } from './base';

export const ACTION_TYPES = ['generate', 'edit', 'video'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];
export type ActionStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';
export type ActionProduct = 'photo' | 'card' | 'video' | 'edit';

/**
 * One version of a card and the read model of its workflow. The API writes it as `pending` together with the
 * spark hold; only activities move it afterwards. Indexes: InitialSchema (account_id, created_at),
 * ActionParamsIndex (GIN on params, for the input purge).
 */
@Entity('actions')
export class Action extends BaseRecord {
  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  @Column({ name: 'project_id', type: 'integer' })
  projectId: number;

  @Column({ name: 'card_id', type: 'integer' })
  cardId: number;

  @Column({ type: 'text' })
  type: ActionType;

  /** What is rendered: the type says which endpoint, the product says which renderer. */
  @Column({ type: 'text' })
  product: ActionProduct;

  @Column({ type: 'text' })
  status: ActionStatus;

  @Column({ type: 'integer' })
  depth: number;

  @Column({ name: 'parent_action_id', type: 'integer', nullable: true })
  parentActionId: number | null;

  @Column({ type: 'integer' })
  price: number;

  /** The validated request with detected values filled in and images replaced by stored input keys. */
  @Column({ type: 'jsonb' })
  params: Record<string, unknown>;

  @Column({ name: 'asset_path', type: 'text', nullable: true })
  assetPath: string | null;

  /** Whether its results are stored with a thumbnail (`thumbnailKeyOf(assetPath)`; migration ActionThumbnails). */
  @Column({ name: 'has_thumbnail', type: 'boolean', default: false })
  hasThumbnail: boolean;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage: string | null;

  @Column({ name: 'client_group_id', type: 'text', nullable: true })
  clientGroupId: string | null;

  @Column({ name: 'webhook_url', type: 'text', nullable: true })
  webhookUrl: string | null;

  /** The provider chosen when it was accepted (ProviderRouting migration; `sandbox` for a test key's work). */
  @Column({ type: 'text', nullable: true })
  provider: string | null;

  /** The provider's task of a video being rendered remotely (ProviderRouting migration); null once it ended. */
  @Column({ name: 'provider_task_id', type: 'text', nullable: true })
  providerTaskId: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;
}
