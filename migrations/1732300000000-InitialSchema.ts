import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the foundation's read models and the spark ledger. Money invariants are enforced by the schema itself:
 * one hold per action, one ledger row per reference, balances that cannot go below what is held.
 * `rate_limit_windows` is UNLOGGED: counters are worth nothing after a crash and must be cheap to write.
 */
export class InitialSchema1732300000000 implements MigrationInterface {
  name = 'InitialSchema1732300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE accounts (
        id serial PRIMARY KEY,
        name text NOT NULL,
        balance integer NOT NULL DEFAULT 0,
        held integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT accounts_held_covered CHECK (held >= 0 AND held <= balance)
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        name text NOT NULL,
        key_hash text NOT NULL,
        prefix text NOT NULL,
        default_grouping text NOT NULL CHECK (default_grouping IN ('api_key_inbox', 'legacy_per_request')),
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX api_keys_key_hash ON api_keys (key_hash)`);
    await q.query(`CREATE INDEX api_keys_account_active ON api_keys (account_id) WHERE revoked_at IS NULL`);
    await q.query(`
      CREATE TABLE projects (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        name text,
        product_name text,
        category_id text,
        concept_id text,
        comment text,
        source text NOT NULL CHECK (source IN ('api', 'api_inbox', 'api_v2')),
        inbox_key_id integer REFERENCES api_keys(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX projects_account_source ON projects (account_id, source, id DESC)`);
    await q.query(`CREATE UNIQUE INDEX projects_inbox_key ON projects (inbox_key_id) WHERE inbox_key_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE cards (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        project_id integer NOT NULL REFERENCES projects(id),
        status text NOT NULL,
        content_type text NOT NULL,
        aspect_ratio text NOT NULL,
        active_action_id integer,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX cards_project ON cards (project_id)`);
    await q.query(`
      CREATE TABLE actions (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        project_id integer NOT NULL REFERENCES projects(id),
        card_id integer NOT NULL REFERENCES cards(id),
        type text NOT NULL CHECK (type IN ('generate', 'edit', 'video')),
        product text NOT NULL CHECK (product IN ('photo', 'card', 'video', 'edit')),
        status text NOT NULL CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
        depth integer NOT NULL DEFAULT 0,
        parent_action_id integer REFERENCES actions(id),
        price integer NOT NULL CHECK (price >= 0),
        params jsonb NOT NULL,
        asset_path text,
        error_message text,
        client_group_id text,
        webhook_url text,
        started_at timestamptz,
        completed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX actions_account_created ON actions (account_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX actions_card ON actions (card_id)`);
    await q.query(`
      ALTER TABLE cards ADD CONSTRAINT cards_active_action FOREIGN KEY (active_action_id) REFERENCES actions(id)`);
    await q.query(`
      CREATE TABLE spark_holds (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        action_id integer NOT NULL UNIQUE REFERENCES actions(id),
        amount integer NOT NULL CHECK (amount >= 0),
        status text NOT NULL CHECK (status IN ('held', 'charged', 'released')),
        created_at timestamptz NOT NULL DEFAULT now(),
        settled_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE spark_ledger (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        amount integer NOT NULL,
        kind text NOT NULL CHECK (kind IN ('grant', 'charge')),
        reference text NOT NULL UNIQUE,
        action_id integer REFERENCES actions(id),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX spark_ledger_account ON spark_ledger (account_id)`);
    await q.query(`
      CREATE TABLE pricing (
        id integer PRIMARY KEY CHECK (id = 1),
        generation integer NOT NULL CHECK (generation >= 0),
        improvement integer NOT NULL CHECK (improvement >= 0),
        video_5sec integer NOT NULL CHECK (video_5sec >= 0),
        video_10sec integer NOT NULL CHECK (video_10sec >= 0),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO pricing (id, generation, improvement, video_5sec, video_10sec) VALUES (1, 5, 3, 10, 18)`);
    await q.query(`
      CREATE UNLOGGED TABLE rate_limit_windows (
        key_id integer NOT NULL,
        window_start bigint NOT NULL,
        count integer NOT NULL,
        PRIMARY KEY (key_id, window_start)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE rate_limit_windows`);
    await q.query(`DROP TABLE pricing`);
    await q.query(`DROP TABLE spark_ledger`);
    await q.query(`DROP TABLE spark_holds`);
    await q.query(`ALTER TABLE cards DROP CONSTRAINT cards_active_action`);
    await q.query(`DROP TABLE actions`);
    await q.query(`DROP TABLE cards`);
    await q.query(`DROP TABLE projects`);
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE accounts`);
  }
}
