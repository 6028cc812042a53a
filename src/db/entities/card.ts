import { Column, Entity } from 'typeorm';
import { BaseRecord } from './base';

/** A card is one product image with its versions (actions). Index: InitialSchema (project_id). */
@Entity('cards')
export class Card extends BaseRecord {
  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  @Column({ name: 'project_id', type: 'integer' })
  projectId: number;

  /** Mirrors its newest version: pending, processing, completed or failed. */
  @Column({ type: 'text' })
  status: string;

  @Column({ name: 'content_type', type: 'text' })
  contentType: string;

  @Column({ name: 'aspect_ratio', type: 'text' })
  aspectRatio: string;

  @Column({ name: 'active_action_id', type: 'integer', nullable: true })
  activeActionId: number | null;
}
