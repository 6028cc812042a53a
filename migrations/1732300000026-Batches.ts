import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: catalogue batches (`/api/v2/batches`). A batch is a list of items, each the body of a v1 generation or edit,
 * run by one batch workflow that starts each item as an ordinary v2 job (its action, hold and job written when the
 * item starts, not at creation). `batch_items.job_id` is set by the statement that accepts the item, only while it
 * is null: an item is accepted, held and run once, whatever is retried or restarted. An item's outcome is its job's
 * (read through `job_id`); `status` here says only what happened before a job existed: `pending` (waiting its
 * turn), `running` (accepted: the job tells the rest), `invalid` (refused at creation with `?partial=true`),
 * `failed` (its images could not be read when it started: nothing held), `skipped` (the budget ran out first) and
 * `cancelled` (the batch was cancelled first). `jobs.type` gains the card and video jobs that batch items run.
 */
export class Batches1732300000026 implements MigrationInterface {
  name = 'Batches1732300000026';
  // A rolling upgrade keeps serving while this runs: short steps, each taking its tables only for an instant (and
  // giving up after `lock_timeout` rather than queueing every reader behind it, then trying again); checks and
  // indexes on the existing tables are validated and built without blocking writes. Safe to run again after any
  // step failed.
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS batches (
        id uuid PRIMARY KEY,
        account_id integer NOT NULL REFERENCES accounts(id),
        key_id integer NOT NULL REFERENCES api_keys(id),
        status text NOT NULL DEFAULT 'queued'
          CHECK (status IN ('queued', 'running', 'completed', 'completed_with_errors', 'budget_exhausted', 'cancelled')),
        max_sparks integer CHECK (max_sparks >= 0),
        webhook_url text,
        item_events boolean NOT NULL DEFAULT false,
        client_group_id text,
        accept_language text,
        sandbox_scenario text,
        items integer NOT NULL,
        price integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        completed_at timestamptz
      )`);
    await q.query('CREATE INDEX IF NOT EXISTS batches_account ON batches (account_id, created_at DESC)');
    await q.query(`
      CREATE TABLE IF NOT EXISTS batch_items (
        batch_id uuid NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
        position integer NOT NULL,
        external_id text,
        type text CHECK (type IN ('photo', 'card', 'video', 'edit')),
        request jsonb NOT NULL,
        price integer NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'running', 'invalid', 'failed', 'skipped', 'cancelled')),
        job_id uuid UNIQUE REFERENCES jobs(id),
        action_id integer REFERENCES actions(id),
        error_code text,
        error_message text,
        PRIMARY KEY (batch_id, position)
      )`);
    // Exactly once per (batch, external_id) among the items that run; refused ones keep what was sent, or null.
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS batch_items_external_id ON batch_items (batch_id, external_id) WHERE status <> 'invalid'`);
    // The stored inputs that items waiting their turn name (their uploads, pinned): the purge of inputs keeps them.
    await q.query('CREATE INDEX IF NOT EXISTS batch_items_pending_requests ON batch_items USING gin (request jsonb_path_ops) WHERE status = \'pending\'');
    // Whether an action is a batch's item (its events go to webhooks that ask for items' events only).
    await q.query('CREATE INDEX IF NOT EXISTS batch_items_action ON batch_items (action_id) WHERE action_id IS NOT NULL');
    await briefly(q, 'ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_type_check',
      `ALTER TABLE jobs ADD CONSTRAINT jobs_type_check CHECK (type IN ('generation.execute', 'edit.execute', 'card.execute', 'video.execute')) NOT VALID`);
    await q.query('ALTER TABLE jobs VALIDATE CONSTRAINT jobs_type_check'); // reads and writes go on

    // Batch webhooks: a delivery is of an action's outcome or of a batch's (\`batch.completed\`, \`batch.failed\`), each
    // target once. A webhook says whether it also takes the events of batches' items (\`item_events\`).
    await briefly(q, 'ALTER TABLE webhooks ADD COLUMN IF NOT EXISTS item_events boolean NOT NULL DEFAULT false');
    await briefly(q, 'ALTER TABLE webhook_deliveries ALTER COLUMN action_id DROP NOT NULL',
      'ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS batch_id uuid');
    const constraints: { conname: string }[] = await q.query(
      `SELECT conname FROM pg_constraint WHERE conrelid = 'webhook_deliveries'::regclass AND conname IN ('webhook_deliveries_batch', 'webhook_deliveries_of_one')`);
    const has = (name: string) => constraints.some((c) => c.conname === name);
    // Every existing row has its action and no batch: checked without holding writes back for a long table's scan.
    if (!has('webhook_deliveries_batch')) {
      await briefly(q, 'ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_batch FOREIGN KEY (batch_id) REFERENCES batches(id) ON DELETE CASCADE NOT VALID');
    }
    if (!has('webhook_deliveries_of_one')) {
      await briefly(q, 'ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_of_one CHECK ((action_id IS NULL) <> (batch_id IS NULL)) NOT VALID');
    }
    await q.query('ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_batch');
    await q.query('ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_of_one');
    // A build that failed half-way leaves an invalid index behind: dropped, then built again.
    const [index] = await q.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('webhook_deliveries_batch_target')`);
    if (index && !index.indisvalid) await q.query('DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_batch_target');
    await q.query(`CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_batch_target ON webhook_deliveries (batch_id, event, COALESCE(webhook_id, 0)) WHERE batch_id IS NOT NULL`);
    // The event feed (migration AccountEvents) records the outcomes of actions' deliveries, not of batches'.
    await briefly(q, 'DROP TRIGGER IF EXISTS webhook_deliveries_to_account ON webhook_deliveries', `
      CREATE TRIGGER webhook_deliveries_to_account AFTER UPDATE OF status ON webhook_deliveries
        FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('succeeded', 'failed', 'skipped') AND NEW.action_id IS NOT NULL)
        EXECUTE FUNCTION account_events_of_delivery()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.startTransaction();
    try {
      await this.undo(q);
      await q.commitTransaction();
    } catch (err) {
      await q.rollbackTransaction();
      throw err;
    }
  }

  private async undo(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER IF EXISTS webhook_deliveries_to_account ON webhook_deliveries');
    await q.query(`
      CREATE TRIGGER webhook_deliveries_to_account AFTER UPDATE OF status ON webhook_deliveries
        FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('succeeded', 'failed', 'skipped'))
        EXECUTE FUNCTION account_events_of_delivery()`);
    await q.query('DELETE FROM webhook_deliveries WHERE batch_id IS NOT NULL');
    await q.query('ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_of_one');
    await q.query('ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS batch_id');
    await q.query('ALTER TABLE webhook_deliveries ALTER COLUMN action_id SET NOT NULL');
    await q.query('ALTER TABLE webhooks DROP COLUMN IF EXISTS item_events');
    await q.query('DROP TABLE IF EXISTS batch_items');
    await q.query('DROP TABLE IF EXISTS batches');
    // Card and video jobs exist only as batch items: their actions stay, as v1 actions.
    await q.query(`DELETE FROM jobs WHERE type IN ('card.execute', 'video.execute')`);
    await q.query('ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_type_check');
    await q.query(`ALTER TABLE jobs ADD CONSTRAINT jobs_type_check CHECK (type IN ('generation.execute', 'edit.execute'))`);
  }
}

/**
 * Runs `statements` in one transaction that waits at most 2 s for its locks (so that it never queues every reader
 * of the table behind a long transaction), trying again up to 30 times (as migration ActionEvents does).
 */
async function briefly(q: QueryRunner, ...statements: string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await q.startTransaction();
    try {
      await q.query(`SET LOCAL lock_timeout = '2s'`);
      for (const sql of statements) await q.query(sql);
      await q.commitTransaction();
      return;
    } catch (err) {
      await q.rollbackTransaction();
      if ((err as { code?: string }).code !== '55P03' || attempt === 30) throw err; // 55P03: lock_not_available
    }
  }
}
