/**
 * Dashboard sessions: a random token in an HttpOnly cookie, its SHA-256 in `user_sessions`, looked up on every
 * request (no cache), so that signing out, a password change or a removed user ends a session on every API process
 * from its next request. A session ends when it is ended, when it was not seen for the idle lifetime, or at its
 * absolute expiry. Each carries its own CSRF token, which the dashboard sends back in a header.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { DashboardSettings } from '../config';
import { sqlRow } from '../db/sql';
import { hashToken, newToken } from './secret-tokens';
import type { Role } from './users';

/** How long a session lives unused (`sessionIdleSeconds`) and at most (`sessionAbsoluteSeconds`). */
export type SessionLifetimes = Pick<DashboardSettings, 'sessionIdleSeconds' | 'sessionAbsoluteSeconds'>;

/** A session just started: its token (for the cookie, never stored) and its user. */
export interface StartedSession { token: string; user: SessionUser }

/** The signed-in user of a request. */
export interface SessionUser {
  sessionId: number;
  userId: number;
  accountId: number;
  email: string;
  role: Role;
  csrfToken: string;
}

type SessionRow = { id: string; user_id: number; account_id: number; email: string; role: Role; csrf_token: string };
const SESSION_USER = 'id, user_id, account_id, email, role, csrf_token';
const sessionUser = (row: SessionRow): SessionUser => ({
  sessionId: Number(row.id), userId: row.user_id, accountId: row.account_id, email: row.email, role: row.role, csrfToken: row.csrf_token,
});

/** Starts a session of the user, answered with the user as a request of it will see them (one statement). */
export async function startSession(m: EntityManager, userId: number, lifetimes: SessionLifetimes): Promise<StartedSession> {
  const token = newToken();
  const row = await sqlRow<SessionRow>(m, `
    WITH started AS (
      INSERT INTO user_sessions (user_id, token_hash, csrf_token, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))
      RETURNING id, user_id, csrf_token
    )
    SELECT started.id, started.user_id, u.account_id, u.email, u.role, started.csrf_token FROM started JOIN users u ON u.id = started.user_id`,
  [userId, hashToken(token), newToken(), lifetimes.sessionAbsoluteSeconds]);
  return { token, user: sessionUser(row!) };
}

/**
 * The live session of a token, with its user (not removed); `last_seen_at` is moved at most once a minute, so
 * a busy page does not write on every request.
 */
export async function sessionOf(db: DataSource, token: string, lifetimes: SessionLifetimes): Promise<SessionUser | undefined> {
  const row = await sqlRow<SessionRow>(db.manager, `
    WITH found AS (
      SELECT s.id, s.user_id, u.account_id, u.email, u.role, s.csrf_token, s.last_seen_at
        FROM user_sessions s JOIN users u ON u.id = s.user_id
       WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now()
         AND s.last_seen_at > now() - make_interval(secs => $2) AND u.removed_at IS NULL
    ), touched AS (
      UPDATE user_sessions s SET last_seen_at = now() FROM found
       WHERE s.id = found.id AND found.last_seen_at < now() - interval '1 minute'
    )
    SELECT ${SESSION_USER} FROM found`, [hashToken(token), lifetimes.sessionIdleSeconds]);
  return row && sessionUser(row);
}

export async function endSession(db: DataSource, sessionId: number): Promise<void> {
  await db.query('UPDATE user_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL', [sessionId]);
}

/** Ends every open session of the user (sign-out everywhere, a password set, a removal). */
export async function endUserSessions(m: EntityManager, userId: number): Promise<void> {
  await m.query('UPDATE user_sessions SET ended_at = now() WHERE user_id = $1 AND ended_at IS NULL', [userId]);
}
