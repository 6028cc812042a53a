import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: API keys are managed only in the account dashboard under a user session (the contract, Authentication 5).
 * - `users`: the people of an account, each in one account with a role (`owner`: everything, members included;
 *   `member`: everything but members); the password is an argon2id hash, null until an invitation link sets it.
 *   An email is one user across all accounts (compared case-insensitively).
 * - `user_sessions`: a signed-in browser; only the SHA-256 of its token is kept, with the CSRF token of the session,
 *   an absolute expiry and the last time it was seen (for the idle lifetime). Ending a session sets `ended_at`.
 * - `user_links`: one-time links (an invitation, a password reset), kept as the SHA-256 of their token.
 * - `password_attempts`: password checks per subject (an email, a client address, a user changing a password, an
 *   email asking for resets) and window, for the throttles: an attempt is counted before its password is checked,
 *   and given back when it was right.
 * - `api_keys.last_used_at`: when a key was last used, to the minute of its rate-limit window.
 */
export class DashboardUsers1732300000019 implements MigrationInterface {
  name = 'DashboardUsers1732300000019';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        email text NOT NULL,
        role text NOT NULL CHECK (role IN ('owner', 'member')),
        password_hash text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        removed_at timestamptz
      )`);
    await q.query('CREATE UNIQUE INDEX users_email ON users (lower(email))');
    await q.query('CREATE INDEX users_account ON users (account_id, id)');
    await q.query(`
      CREATE TABLE user_sessions (
        id bigserial PRIMARY KEY,
        user_id integer NOT NULL REFERENCES users(id),
        token_hash text NOT NULL UNIQUE,
        csrf_token text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        ended_at timestamptz
      )`);
    await q.query('CREATE INDEX user_sessions_open ON user_sessions (user_id) WHERE ended_at IS NULL');
    await q.query(`
      CREATE TABLE user_links (
        id bigserial PRIMARY KEY,
        user_id integer NOT NULL REFERENCES users(id),
        purpose text NOT NULL CHECK (purpose IN ('invite', 'reset')),
        token_hash text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      )`);
    await q.query('CREATE INDEX user_links_user ON user_links (user_id)');
    await q.query(`
      CREATE TABLE password_attempts (
        subject text NOT NULL,
        window_start bigint NOT NULL,
        attempts integer NOT NULL CHECK (attempts >= 0),
        PRIMARY KEY (subject, window_start)
      )`);
    await q.query('ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE api_keys DROP COLUMN last_used_at');
    await q.query('DROP TABLE password_attempts');
    await q.query('DROP TABLE user_links');
    await q.query('DROP TABLE user_sessions');
    await q.query('DROP TABLE users');
  }
}
