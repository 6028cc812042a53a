import type { EntityManager, EntityTarget } from 'typeorm';
import { forbidden, notFound } from '../errors';
import type { Caller } from '../services';

/**
 * Loads a resource of the caller by id: 404 `not_found` when it does not exist, 403 `forbidden` when it belongs
 * to another account (the v1 rule; v2 answers 404 for both).
 */
export async function requireOwn<T extends { accountId: number }>(
  m: EntityManager, entity: EntityTarget<T>, id: number, caller: Caller, label: string,
): Promise<T> {
  const found = await m.findOneBy(entity, { id } as never);
  return assertOwn(found, found?.accountId, caller, `${label} ${id}`);
}

/** The rule of `requireOwn` for a row read some other way (a prepared select): 404 if absent, 403 if not the caller's. */
export function assertOwn<T>(found: T | null | undefined, accountId: number | undefined, caller: Caller, what: string): T {
  if (!found) throw notFound(what);
  if (accountId !== caller.accountId) throw forbidden(what);
  return found;
}
