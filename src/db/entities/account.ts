import { Column, Entity } from 'typeorm';
import { BaseRecord } from './base';

/**
 * An account holds sparks. `balance` always equals the sum of its ledger entries; `held` equals the sum of its
 * open holds. Both move only inside the transaction that writes the matching ledger entry or hold row.
 */
@Entity('accounts')
export class Account extends BaseRecord {
  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'integer' })
  balance: number;

  @Column({ type: 'integer' })
  held: number;

  /** Set on an account's sandbox (SandboxAccounts migration): the live account whose test keys use it. */
  @Column({ name: 'sandbox_of', type: 'integer', nullable: true })
  sandboxOf: number | null;
}
