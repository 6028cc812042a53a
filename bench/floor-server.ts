/**
 * A child process of the benchmark: bare Koa, the HTTP floors. `GET /const` answers a constant; `GET /select/:id`
 * does what every authenticated request does first (the API key's hash looked up in `api_keys`, as
 * api/middleware/auth.ts does, through the same TypeORM data source) and one indexed select (an action by id).
 * `node floor-server.js <database url> <port>`; prints `ready` once listening.
 */
import http from 'node:http';
import Koa from 'koa';
import { openDatabase } from '../src/db/data-source';
import { sqlRow } from '../src/db/sql';
import { hashApiKey } from '../src/accounts/accounts';

async function main(databaseUrl: string, port: number): Promise<void> {
  const db = await openDatabase(databaseUrl, { migrate: false }); // the service's pool size (the default)
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.path === '/const') {
      ctx.body = { ok: true };
      return;
    }
    const match = /^\/select\/(\d+)$/.exec(ctx.path);
    if (!match) return void (ctx.status = 404);
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('Authorization'));
    if (!bearer) return void (ctx.status = 401);
    const key = await sqlRow(db.manager,
      'SELECT id, account_id, name, default_grouping FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL', [hashApiKey(bearer[1])]);
    if (!key) return void (ctx.status = 401);
    const action = await sqlRow(db.manager, 'SELECT id, status, updated_at FROM actions WHERE id = $1 AND account_id = $2', [Number(match[1]), key.account_id]);
    if (!action) return void (ctx.status = 404);
    ctx.body = { id: action.id, status: action.status, updated_at: action.updated_at };
  });
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void db.destroy().finally(() => process.exit(0));
  });
  process.stdout.write('ready\n');
}

main(process.argv[2], Number(process.argv[3])).catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
