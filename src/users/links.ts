/**
 * One-time links: an invitation (sets the first password) or a password reset. The token travels in the link's
 * fragment (`/dashboard/#link=<token>`), which browsers never send to a server, so it stays out of access logs
 * and Referer headers; only its SHA-256 is stored. Redeeming one sets the password, spends every open link of the
 * user and ends all of the user's sessions, in one transaction.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { hashPassword } from './passwords';
import { hashToken, newToken } from './secret-tokens';
import { endUserSessions } from './sessions';

export type LinkPurpose = 'invite' | 'reset';
export const INVITE_LINK_SECONDS = 7 * 24 * 3600;
export const RESET_LINK_SECONDS = 3600;

export async function createLink(m: EntityManager, userId: number, purpose: LinkPurpose, lifetimeSeconds: number): Promise<string> {
  const token = newToken();
  await m.query(`INSERT INTO user_links (user_id, purpose, token_hash, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
    [userId, purpose, hashToken(token), lifetimeSeconds]);
  return token;
}

/** The dashboard's address that opens a link (the token in the fragment). */
export function linkUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/dashboard/#link=${token}`;
}

/**
 * A reset link for the user of this email, if there is one (undefined otherwise: the caller says the same either
 * way); the user's earlier reset links are spent.
 */
export async function createResetLink(db: DataSource, email: string): Promise<{ userId: number; email: string; token: string } | undefined> {
  return db.transaction(async (m) => {
    const user = await sqlRow<{ id: number; email: string }>(m, 'SELECT id, email FROM users WHERE lower(email) = lower($1) AND removed_at IS NULL', [email]);
    if (!user) return undefined;
    await m.query(`UPDATE user_links SET used_at = now() WHERE user_id = $1 AND purpose = 'reset' AND used_at IS NULL`, [user.id]);
    return { userId: user.id, email: user.email, token: await createLink(m, user.id, 'reset', RESET_LINK_SECONDS) };
  });
}

/**
 * Sets a user's password (already hashed): every open link of the user is spent and every session ended, in the
 * caller's transaction (a redeemed link, a password change).
 */
export async function setPassword(m: EntityManager, userId: number, passwordHash: string): Promise<void> {
  await m.query('UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1', [userId, passwordHash]);
  await m.query('UPDATE user_links SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [userId]);
  await endUserSessions(m, userId);
}

/**
 * Spends a link and sets the user's password; answers the user, or undefined when the link is unknown, used or
 * expired (one answer for all three). The link is found (and locked) before the password is hashed, so a guessed
 * token costs no hashing.
 */
export async function redeemLink(db: DataSource, token: string, password: string): Promise<{ userId: number } | undefined> {
  return db.transaction(async (m) => {
    const link = await sqlRow<{ user_id: number }>(m, `
      SELECT l.user_id FROM user_links l JOIN users u ON u.id = l.user_id
       WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now() AND u.removed_at IS NULL
       FOR UPDATE OF l`, [hashToken(token)]);
    if (!link) return undefined;
    await setPassword(m, link.user_id, await hashPassword(password));
    return { userId: link.user_id };
  });
}
