import { Column, Entity, PrimaryGeneratedColumn, CreateDateColumn } from 'typeorm';

export type HoldStatus = 'held' | 'charged' | 'released';

/** Sparks reserved for one action; settled exactly once (unique action_id, conditional status move). */
@Entity('spark_holds')
export class SparkHold {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  @Column({ name: 'action_id', type: 'integer', unique: true })
  actionId: number;

  @Column({ type: 'integer' })
  amount: number;

  @Column({ type: 'text' })
  status: HoldStatus;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'settled_at', type: 'timestamptz', nullable: true })
  settledAt: Date | null;
}
