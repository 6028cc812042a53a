/**
 * The people of an account who sign in to its dashboard: invited by the operator's CLI (an account's first owner) or
 * by an owner, each in one account with a role. An invitation makes the user without a password and a one-time link
 * that sets it (see links.ts).
 */
import type { DataSource, EntityManager } from 'typeorm';
import { fullFormats } from 'ajv-formats/dist/formats';
import { lockAccount } from '../accounts/accounts';
import { sqlRow, sqlRows } from '../db/sql';
import { createLink, INVITE_LINK_SECONDS } from './links';
import { endUserSessions } from './sessions';

export type Role = 'owner' | 'member';
export const ROLES: readonly Role[] = ['owner', 'member'];

export interface UserRow {
  id: number;
  account_id: number;
  email: string;
  role: Role;
  /** Whether a password is set (an invitation not yet accepted has none). */
  active: boolean;
  created_at: string;
}

const USER_COLUMNS = `id, account_id, email, role, password_hash IS NOT NULL AS active, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at`;

export class UnknownAccount extends Error {}

/**
 * Invites `email` into the account with `role`: a new user, one of this account not yet signed up, or one removed
 * from any account (made again here with this role). Answers the user and the link's token, or 'taken' when the
 * email belongs to a user who can sign in, here or in another account, or is invited to another (the caller
 * decides what to say: an owner is not told which).
 */
export async function inviteUser(
  db: DataSource, input: { accountId: number; email: string; role: Role },
): Promise<{ userId: number; token: string } | 'taken'> {
  return db.transaction((m) => inviteUserIn(m, input));
}

/** inviteUser in the caller's transaction. */
export async function inviteUserIn(
  m: EntityManager, input: { accountId: number; email: string; role: Role },
): Promise<{ userId: number; token: string } | 'taken'> {
  // An account's sandbox has no users: it is reached only with its test keys, managed from the live account.
  if (!(await lockAccount(m, input.accountId, { live: true }))) throw new UnknownAccount(`account ${input.accountId} not found`);
  // The email's row, made here or found: one statement, so two invitations of one new email at once (even into two
  // accounts) make one user and find it, never a duplicate key.
  const inserted = await sqlRow<{ id: number }>(m,
    'INSERT INTO users (account_id, email, role) VALUES ($1, $2, $3) ON CONFLICT ((lower(email))) DO NOTHING RETURNING id',
    [input.accountId, input.email, input.role]);
  let userId = inserted?.id;
  if (userId === undefined) {
    const existing = await sqlRow<{ id: number; account_id: number; has_password: boolean; removed: boolean }>(m,
      'SELECT id, account_id, password_hash IS NOT NULL AS has_password, removed_at IS NOT NULL AS removed FROM users WHERE lower(email) = lower($1) FOR UPDATE',
      [input.email]);
    // Removed from any account, or invited here and not yet signed up: invited (again) here, with this role.
    if (!existing || !(existing.removed || (existing.account_id === input.accountId && !existing.has_password))) return 'taken';
    userId = existing.id;
    await m.query('UPDATE users SET account_id = $2, role = $3, password_hash = NULL, removed_at = NULL, updated_at = now() WHERE id = $1',
      [userId, input.accountId, input.role]);
    await m.query('UPDATE user_links SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [userId]);
  }
  return { userId, token: await createLink(m, userId, 'invite', INVITE_LINK_SECONDS) };
}

/** An email as the API's schemas take it (ajv-formats' `email`), for the CLI, which has no schema. */
export function isEmail(value: string): boolean {
  return value.length <= 254 && (fullFormats.email as RegExp).test(value);
}

export async function listUsers(db: DataSource, accountId: number): Promise<UserRow[]> {
  return sqlRows<UserRow>(db.manager, `SELECT ${USER_COLUMNS} FROM users WHERE account_id = $1 AND removed_at IS NULL ORDER BY id`, [accountId]);
}

export async function userOf(m: EntityManager, accountId: number, userId: number): Promise<UserRow | undefined> {
  return sqlRow<UserRow>(m, `SELECT ${USER_COLUMNS} FROM users WHERE id = $1 AND account_id = $2 AND removed_at IS NULL`, [userId, accountId]);
}

/** The stored password hash of a user who can sign in (not removed). */
export async function passwordHashOf(db: DataSource, userId: number): Promise<string | null | undefined> {
  return (await sqlRow<{ password_hash: string | null }>(db.manager, 'SELECT password_hash FROM users WHERE id = $1 AND removed_at IS NULL', [userId]))?.password_hash;
}

export class LastOwner extends Error {}

/**
 * Changes a user's role or removes the user (their sessions end at once); an account always keeps one owner with a
 * password. Answers undefined when the user is not one of the account's.
 */
export async function changeUser(
  db: DataSource, accountId: number, userId: number, change: { role: Role } | { remove: true },
): Promise<UserRow | 'removed' | undefined> {
  return db.transaction(async (m) => {
    await lockAccount(m, accountId); // serialises the last-owner check across processes
    const user = await userOf(m, accountId, userId);
    if (!user) return undefined;
    const losesOwner = user.role === 'owner' && ('remove' in change || change.role !== 'owner');
    if (losesOwner) {
      const [{ n }] = await sqlRows<{ n: number }>(m,
        `SELECT count(*)::int AS n FROM users WHERE account_id = $1 AND role = 'owner' AND removed_at IS NULL AND password_hash IS NOT NULL AND id <> $2`,
        [accountId, userId]);
      if (n === 0) throw new LastOwner('An account keeps at least one owner who can sign in');
    }
    if ('remove' in change) {
      await m.query('UPDATE users SET removed_at = now(), updated_at = now() WHERE id = $1', [userId]);
      await m.query('UPDATE user_links SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [userId]);
      await endUserSessions(m, userId);
      return 'removed';
    }
    await m.query('UPDATE users SET role = $2, updated_at = now() WHERE id = $1', [userId, change.role]);
    return { ...user, role: change.role };
  });
}
