/**
 * Throttles of password checks, per subject (an email, a client address, a user changing a password, an email
 * asking for resets), in windows of the database's clock (`password_attempts`). An attempt is counted before its
 * password is checked, in one statement for all its subjects, so requests at once cannot all slip under a limit
 * while their checks run; a right password gives its attempt back.
 */
import type { DataSource } from 'typeorm';
import { sqlRows } from '../db/sql';
import { PASSWORD_ATTEMPT_WINDOW_SECONDS } from '../housekeeping/retention';

export interface AttemptLimit { subject: string; limit: number }

/**
 * Counts one attempt for every subject; answers undefined when each is within its limit (this one included), or the
 * seconds until the window ends when one is past it (the attempt stays counted: it was refused unchecked).
 */
export async function takeAttempt(db: DataSource, limits: AttemptLimit[]): Promise<number | undefined> {
  const rows = await sqlRows<{ subject: string; attempts: number; retry_after: number }>(db.manager, `
    INSERT INTO password_attempts AS a (subject, window_start, attempts)
    SELECT s, floor(extract(epoch FROM now()) / $2)::bigint, 1 FROM unnest($1::text[]) AS s
    ON CONFLICT (subject, window_start) DO UPDATE SET attempts = a.attempts + 1
    RETURNING subject, attempts, ceil((window_start + 1) * $2 - extract(epoch FROM now()))::int AS retry_after`,
  [limits.map((l) => l.subject), PASSWORD_ATTEMPT_WINDOW_SECONDS]);
  const over = rows.find((r) => r.attempts > limits.find((l) => l.subject === r.subject)!.limit);
  return over ? Math.max(1, over.retry_after) : undefined;
}

/** Gives back the attempt of these subjects in the current window (the password was right). */
export async function giveBackAttempt(db: DataSource, subjects: string[]): Promise<void> {
  await db.query(`
    UPDATE password_attempts SET attempts = attempts - 1
     WHERE subject = ANY($1) AND window_start = floor(extract(epoch FROM now()) / $2)::bigint AND attempts > 0`,
  [subjects, PASSWORD_ATTEMPT_WINDOW_SECONDS]);
}
