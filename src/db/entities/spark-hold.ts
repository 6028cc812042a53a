import { Column, Entity, PrimaryGeneratedColumn, CreateDateColumn } from 'typeorm';

export type HoldStatus = 'held' | 'charged' | 'released';

/**
 * Sparks reserved for one action, or under a `reference` for a hold that belongs to no action (a paid block of
 * helper calls, migration HelperUsage1732300000009); settled exactly once (unique action_id or one open hold per
 * reference, conditional status move).
 */
@Entity('spark_holds')
export class SparkHold {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'account_id', type: 'integer' })
  accountId: number;

  @Column({ name: 'action_id', type: 'integer', unique: true, nullable: true })
  actionId: number | null;

  @Column({ type: 'text', nullable: true })
  reference: string | null;

  @Column({ type: 'integer' })
  amount: number;

  @Column({ type: 'text' })
  status: HoldStatus;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'settled_at', type: 'timestamptz', nullable: true })
  settledAt: Date | null;
}
