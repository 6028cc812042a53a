/**
 * Dashboard sessions: a random token in an HttpOnly cookie, its SHA-256 in `user_sessions`, looked up on every
 * request (no cache), so that signing out, a password change or a removed user ends a session on every API process
 * from its next request. A session ends when it is ended, when it was not seen for the idle lifetime, or at its
 * absolute expiry. Each carries its own CSRF token, which the dashboard sends back in a header.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { hashToken, newToken } from './secret-tokens';
import type { Role } from './users';

export interface SessionLifetimes {
  /** A session not seen for this long has ended. */
  idleSeconds: number;
  /** A session ends this long after sign-in, seen or not. */
  absoluteSeconds: number;
}

export interface StartedSession { token: string; csrfToken: string; sessionId: number }

/** The signed-in user of a request. */
export interface SessionUser {
  sessionId: number;
  userId: number;
  accountId: number;
  email: string;
  role: Role;
  csrfToken: string;
}

export async function startSession(m: EntityManager, userId: number, lifetimes: SessionLifetimes): Promise<StartedSession> {
  const [token, csrfToken] = [newToken(), newToken()];
  const row = await sqlRow<{ id: string }>(m, `
    INSERT INTO user_sessions (user_id, token_hash, csrf_token, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))
    RETURNING id`, [userId, hashToken(token), csrfToken, lifetimes.absoluteSeconds]);
  return { token, csrfToken, sessionId: Number(row!.id) };
}

/**
 * The live session of a token, with its user (not removed); `last_seen_at` is moved at most once a minute, so
 * a busy page does not write on every request.
 */
export async function sessionOf(db: DataSource, token: string, lifetimes: SessionLifetimes): Promise<SessionUser | undefined> {
  const row = await sqlRow<{ id: string; user_id: number; account_id: number; email: string; role: Role; csrf_token: string }>(db.manager, `
    WITH found AS (
      SELECT s.id, s.user_id, u.account_id, u.email, u.role, s.csrf_token, s.last_seen_at
        FROM user_sessions s JOIN users u ON u.id = s.user_id
       WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now()
         AND s.last_seen_at > now() - make_interval(secs => $2) AND u.removed_at IS NULL
    ), touched AS (
      UPDATE user_sessions s SET last_seen_at = now() FROM found
       WHERE s.id = found.id AND found.last_seen_at < now() - interval '1 minute'
    )
    SELECT id, user_id, account_id, email, role, csrf_token FROM found`, [hashToken(token), lifetimes.idleSeconds]);
  if (!row) return undefined;
  return { sessionId: Number(row.id), userId: row.user_id, accountId: row.account_id, email: row.email, role: row.role, csrfToken: row.csrf_token };
}

export async function endSession(db: DataSource, sessionId: number): Promise<void> {
  await db.query('UPDATE user_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL', [sessionId]);
}

/** Ends every open session of the user but `exceptSessionId` (sign-out everywhere, a password change, a removal). */
export async function endUserSessions(m: EntityManager, userId: number, exceptSessionId?: number): Promise<void> {
  await m.query('UPDATE user_sessions SET ended_at = now() WHERE user_id = $1 AND ended_at IS NULL AND id <> $2',
    [userId, exceptSessionId ?? 0]);
}
