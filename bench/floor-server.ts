/**
 * A child process of the benchmark: bare Koa on a raw `pg.Pool` of the service's size, the HTTP floors. Each floor
 * does the least work its real route must do, and no more (test/bench/floor-statements.test.ts holds it to that:
 * never more statements or round trips than the service's route):
 *
 * `GET /const`: a constant. Koa alone.
 *
 * `GET /select/:id` (the poll floor; the service's `GET /status/{id}`, `/api/v2/jobs/{id}`, `/balance`):
 *   1. the key by the SHA-256 of its secret, a named prepared statement. The service: one prepared statement that
 *      finds the key and counts the request in its rate-limit window (an upsert), batched with the other requests
 *      that arrive meanwhile (api/middleware/counted-key-lookup.ts);
 *   2. the action by primary key and account, a named prepared statement, JSON out. The service: one prepared
 *      statement (the action with its hold, or the job; the balance came with the key), batched by primary key with
 *      the polls that arrive meanwhile (src/db/batcher.ts), and the view (signed result URL, money).
 *
 * `POST /accept` (the accept floor; the service's `POST /generate/photo`):
 *   1. the key by hash, as above;
 *   2. one statement, its own transaction: a card, the action (`starting`), its hold (reserved at commit by the
 *      deferred trigger, as every hold is) and its Idempotency-Key row with the answer. The service: the key claimed,
 *      the card placed in its project, the action, the hold, the answer recorded (src/actions/submit.ts);
 *   3. a bare workflow start (`benchNoopWorkflow`, no search attributes, on a queue nobody serves). The service:
 *      the action's workflow, typed, with its search attributes and summary (src/temporal/starts.ts).
 *   Not done here, done by the service: reading and checking the image (its header), storing it,
 *   pricing, the project's resolution, the request's validation.
 *
 * `node floor-server.js <database url> <temporal address> <port>`; prints `ready` once listening.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import Koa from 'koa';
import { Pool } from 'pg';
import { hashApiKey } from '../src/accounts/accounts';
import { CONNECTION_SETTINGS, DEFAULT_POOL_SIZE } from '../src/db/data-source';

/** The key by hash: what every authenticated request needs first. */
const KEY_BY_HASH = { name: 'floor_key_by_hash', text: 'SELECT id, account_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL' };
/** One indexed select: an action of the key's account. */
const ACTION_BY_ID = { name: 'floor_action_by_id', text: 'SELECT id, status, updated_at FROM actions WHERE id = $1 AND account_id = $2' };
/** An accept's one transaction, in one statement: card, action, hold and Idempotency-Key row. */
const ACCEPT = {
  name: 'floor_accept',
  text: `
    WITH card AS (
      INSERT INTO cards (account_id, project_id, status, content_type, aspect_ratio) VALUES ($1, $2, 'pending', 'photo', '1:1') RETURNING id
    ), action AS (
      INSERT INTO actions (account_id, project_id, card_id, type, product, status, start_state, price, params, provider)
      SELECT $1, $2, card.id, 'generate', 'photo', 'pending', 'starting', $3, $4, 'local' FROM card RETURNING id, card_id
    ), hold AS (
      INSERT INTO spark_holds (account_id, action_id, amount, status, reserve_at_commit) SELECT $1, id, $3, 'held', true FROM action
    ), claimed AS (
      INSERT INTO idempotency_keys (account_id, scope, key, request_hash, response_status, response_body, action_id)
      SELECT $1, 'floor', $5, $6, 200, jsonb_build_object('action_id', id, 'card_id', card_id, 'project_id', $2::int), id FROM action
    )
    SELECT id, card_id FROM action`,
};

async function main(databaseUrl: string, temporalAddress: string, port: number): Promise<void> {
  const pool = new Pool({ connectionString: databaseUrl, max: DEFAULT_POOL_SIZE, ...CONNECTION_SETTINGS });
  const connection = await Connection.connect({ address: temporalAddress });
  const temporal = new Client({ connection, namespace: 'default' });
  const projects = new Map<number, number>(); // the account's project the floor's cards go in (made once)

  const keyOf = async (authorization: string) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!bearer) return undefined;
    return (await pool.query<{ id: number; account_id: number }>({ ...KEY_BY_HASH, values: [hashApiKey(bearer[1])] })).rows[0];
  };
  const projectOf = async (accountId: number) => {
    let project = projects.get(accountId);
    if (project === undefined) {
      project = (await pool.query(`INSERT INTO projects (account_id, name, source) VALUES ($1, 'floor', 'api') RETURNING id`, [accountId])).rows[0].id as number;
      projects.set(accountId, project);
    }
    return project;
  };

  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.path === '/const') {
      ctx.body = { ok: true };
      return;
    }
    const select = /^\/select\/(\d+)$/.exec(ctx.path);
    if (!select && !(ctx.path === '/accept' && ctx.method === 'POST')) return void (ctx.status = 404);
    const key = await keyOf(ctx.get('Authorization'));
    if (!key) return void (ctx.status = 401);
    if (select) {
      const action = (await pool.query({ ...ACTION_BY_ID, values: [Number(select[1]), key.account_id] })).rows[0];
      if (!action) return void (ctx.status = 404);
      ctx.body = { id: action.id, status: action.status, updated_at: action.updated_at };
      return;
    }
    const projectId = await projectOf(key.account_id);
    const idempotencyKey = ctx.get('Idempotency-Key') || randomUUID();
    const { rows: [placed] } = await pool.query({ ...ACCEPT, values: [key.account_id, projectId, 5, {}, idempotencyKey, idempotencyKey] });
    await temporal.workflow.start('benchNoopWorkflow', { taskQueue: 'bench-floor-unserved', workflowId: `floor-accept-${placed.id}` });
    ctx.body = { action_id: placed.id, status: 'pending', poll_url: `/api/v1/public/status/${placed.id}`, project_id: projectId, card_id: placed.card_id };
  });
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void Promise.allSettled([pool.end(), connection.close()]).finally(() => process.exit(0));
  });
  process.stdout.write('ready\n');
}

main(process.argv[2], process.argv[3], Number(process.argv[4])).catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
