import { Column, Entity } from 'typeorm';
import { BaseRecord } from './base';

export type ProjectSource = 'api' | 'api_inbox' | 'api_v2';

/** Project > Card > Action. Index: InitialSchema (account_id, source; unique inbox_key_id). */
@Entity('projects')
export class Project extends BaseRecord {
  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  @Column({ type: 'text', nullable: true })
  name: string | null;

  @Column({ name: 'product_name', type: 'text', nullable: true })
  productName: string | null;

  @Column({ name: 'category_id', type: 'text', nullable: true })
  categoryId: string | null;

  @Column({ name: 'concept_id', type: 'text', nullable: true })
  conceptId: string | null;

  @Column({ type: 'text', nullable: true })
  comment: string | null;

  @Column({ type: 'text' })
  source: ProjectSource;

  /** Set on the one inbox project of an `api_key_inbox` key. */
  @Column({ name: 'inbox_key_id', type: 'integer', nullable: true })
  inboxKeyId: number | null;
}
