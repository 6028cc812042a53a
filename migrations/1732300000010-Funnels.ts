import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: a funnel session (`/funnels`) is a conversation over minutes or days, run by the workflow `funnel-<id>`;
 * this is its read model, which `GET /funnels/{id}` serves. The workflow writes each step (ideas, setup, the end);
 * the API writes the start and, in the transaction that holds the card's price, the card's action with the
 * answers (`cards_started` is the conditional counter that makes a card start at most once per generate).
 */
export class Funnels1732300000010 implements MigrationInterface {
  name = 'Funnels1732300000010';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE funnels (
        id serial PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        project_id integer NOT NULL REFERENCES projects(id),
        status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'generated', 'expired')),
        locale text NOT NULL,
        inputs jsonb NOT NULL,
        product jsonb NOT NULL,
        questions jsonb NOT NULL,
        ideas jsonb NOT NULL DEFAULT '[]',
        setup jsonb,
        answers jsonb,
        chosen_idea_id text,
        action_id integer REFERENCES actions(id),
        cards_started integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        ended_at timestamptz
      )`);
    await q.query(`CREATE INDEX funnels_account ON funnels (account_id)`);
    // The purge of stored inputs asks whether a live session still needs a file.
    await q.query(`CREATE INDEX funnels_live_inputs ON funnels USING gin (inputs jsonb_path_ops) WHERE status <> 'expired'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE funnels`);
  }
}
