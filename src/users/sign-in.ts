/**
 * Signing in with email and password, throttled per email (10 wrong passwords in 15 minutes) and per client address
 * (100): past either, attempts are refused without checking the password until the window ends. The answer never
 * says whether the email exists: an unknown email costs a password verification like a known one and answers the
 * same refusal.
 */
import type { DataSource } from 'typeorm';
import { sqlRow } from '../db/sql';
import { giveBackAttempt, takeAttempt } from './password-attempts';
import { passwordMatches } from './passwords';
import { type SessionLifetimes, type StartedSession, startSession } from './sessions';

export const FAILURES_PER_EMAIL = 10;
export const FAILURES_PER_ADDRESS = 100;

export type SignInOutcome =
  | { outcome: 'signed-in'; session: StartedSession }
  | { outcome: 'refused' }
  | { outcome: 'throttled'; retryAfterSeconds: number };

export async function signIn(
  db: DataSource, input: { email: string; password: string; address: string }, lifetimes: SessionLifetimes,
): Promise<SignInOutcome> {
  const subjects = [`email:${input.email.toLowerCase()}`, `address:${input.address}`];
  const throttled = await takeAttempt(db, [
    { subject: subjects[0], limit: FAILURES_PER_EMAIL }, { subject: subjects[1], limit: FAILURES_PER_ADDRESS },
  ]);
  if (throttled !== undefined) return { outcome: 'throttled', retryAfterSeconds: throttled };
  const user = await sqlRow<{ id: number; password_hash: string | null }>(db.manager,
    'SELECT id, password_hash FROM users WHERE lower(email) = lower($1) AND removed_at IS NULL', [input.email]);
  const matches = await passwordMatches(user?.password_hash, input.password); // a decoy verification for no user
  if (!user || !matches) return { outcome: 'refused' };
  await giveBackAttempt(db, subjects);
  return { outcome: 'signed-in', session: await startSession(db.manager, user.id, lifetimes) };
}
