/**
 * Effects that must happen only if a transaction commits (a metric counting a charge, a completion): registered
 * with `afterCommit(m, effect)` inside the transaction, run once when its outermost COMMIT succeeds, dropped when it
 * rolls back. Outside a transaction the effect runs at once (the statement has committed by itself).
 */
import { EventSubscriber, type EntityManager, type EntitySubscriberInterface, type QueryRunner } from 'typeorm';
import type { TransactionCommitEvent } from 'typeorm/subscriber/event/TransactionCommitEvent';
import type { TransactionRollbackEvent } from 'typeorm/subscriber/event/TransactionRollbackEvent';

const pending = new WeakMap<QueryRunner, Array<() => void>>();

export function afterCommit(m: EntityManager, effect: () => void): void {
  const runner = m.queryRunner;
  if (!runner?.isTransactionActive) return effect();
  const effects = pending.get(runner);
  if (effects) effects.push(effect);
  else pending.set(runner, [effect]);
}

/** The TypeORM subscriber (registered on the data source) that runs or drops the effects. */
@EventSubscriber()
export class AfterCommit implements EntitySubscriberInterface {
  afterTransactionCommit(event: TransactionCommitEvent): void {
    if (event.queryRunner.isTransactionActive) return; // a savepoint released: the outer transaction decides
    const effects = pending.get(event.queryRunner);
    pending.delete(event.queryRunner);
    for (const effect of effects ?? []) effect();
  }

  /** Drops all effects, a savepoint's rollback too: a count may then miss, never count what did not commit. */
  afterTransactionRollback(event: TransactionRollbackEvent): void {
    pending.delete(event.queryRunner);
  }
}
