import { Column, Entity, PrimaryGeneratedColumn, CreateDateColumn } from 'typeorm';

export type LedgerKind = 'grant' | 'charge';

/**
 * Every change of an account's balance, one row per event. `reference` is unique, so replaying the same event
 * (a retried activity, a repeated CLI call with the same reference) cannot book it twice.
 */
@Entity('spark_ledger')
export class SparkLedgerEntry {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  /** Positive for grants, negative for charges. */
  @Column({ type: 'integer' })
  amount: number;

  @Column({ type: 'text' })
  kind: LedgerKind;

  @Column({ type: 'text', unique: true })
  reference: string;

  @Column({ name: 'action_id', type: 'integer', nullable: true })
  actionId: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
