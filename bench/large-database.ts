/**
 * Cost as the work grows: the same figures on two databases of their own, each served by an API process of its own
 * and measured in turn: a small one holding only the measured account, and a large one holding the same account
 * built the same way and then `total` actions over `accounts` accounts, each action with its project, card, hold
 * (charged), ledger row and three events (pending, processing, completed), one in ten a v2 job's, made over the month
 * before the last hour (a live database's recent minutes hold the work of its workers, which the phase does not
 * imitate). The measured account: 2,000 actions of its own (200 of them tagged with a `client_group_id`) in 200
 * projects, 200 of them v2 jobs'; the other accounts' rows are what grows.
 * Each figure on the large database must stay within 1.25x of the small one's (indexes where plans scan, keyset
 * paging where offsets grow).
 */
import { Client as TemporalClient, Connection } from '@temporalio/client';
import http from 'node:http';
import type { DataSource } from 'typeorm';
import { reconcile } from '../src/actions/reconcile';
import { apiClient, newAccount, V1 } from '../test/support/fixtures';
import { httpLoad, inTurn } from './load';
import { Figures, recordLoad, recordValue } from './measured';
import { startService, type ServiceContext } from './service';
import { stat } from './stats';


const OWN_ACTIONS = 2_000;
/** The seeded actions' age: a month. */
const HISTORY_SECONDS = 30 * 24 * 3600;
const GROUP = 'bench-large-group';

/**
 * Rows straight into the tables, set-wise, with triggers and foreign keys off for the session (the rows are made
 * consistent by construction): `count` actions of `accountIds` in turn, ten to a project, one card each, charged.
 */
export async function insertActions(db: DataSource, accountIds: number[], count: number, options: { group?: number } = {}): Promise<void> {
  const runner = db.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SET session_replication_role = replica');
    await runner.startTransaction();
    const [{ base }] = await runner.query(`SELECT greatest(
      (SELECT coalesce(max(id), 0) FROM actions), (SELECT coalesce(max(id), 0) FROM cards), (SELECT coalesce(max(id), 0) FROM projects)) + 1 AS base`);
    const accountOf = { sql: `($1::int[])[1 + (g / 10) % ${accountIds.length}]` };
    const ids = [accountIds];
    const series = `FROM generate_series(0, ${count - 1}) g`;
    // Spread over the month before the hour before now: history, not a burst of completions the reconciler's pass
    // (which reads the last minute's completions) would find as if a thousand workers had just finished them.
    const created = `now() - interval '1 hour' - make_interval(secs => (${count} - g) * ${HISTORY_SECONDS / count})`;
    await runner.query(`INSERT INTO projects (id, account_id, name, source, created_at, updated_at)
      SELECT ${base} + g / 10, ${accountOf.sql}, 'bench ' || g / 10, 'api', ${created}, ${created} ${series} WHERE g % 10 = 0`, ids);
    await runner.query(`INSERT INTO cards (id, account_id, project_id, status, content_type, aspect_ratio, active_action_id, created_at, updated_at)
      SELECT ${base} + g, ${accountOf.sql}, ${base} + g / 10, 'completed', 'photo', '1:1', ${base} + g, ${created}, ${created} ${series}`, ids);
    await runner.query(`INSERT INTO actions (id, account_id, project_id, card_id, type, product, status, start_state, price, params, provider,
        asset_path, client_group_id, started_at, completed_at, created_at, updated_at)
      SELECT ${base} + g, ${accountOf.sql}, ${base} + g / 10, ${base} + g, 'generate', 'photo', 'completed', 'started', 5,
        jsonb_build_object('inputs', jsonb_build_array('inputs/bench/' || g || '.jpg'), 'productName', 'Bench cup', 'categoryId', 'home',
          'conceptId', 'home_in_use', 'locale', 'en', 'photoStyle', 'classic', 'aspectRatio', '1:1', 'resolution', '1K'),
        'local', 'results/' || (${base} + g) || '/bench.jpg', ${options.group ? `CASE WHEN g % ${options.group} = 0 THEN '${GROUP}' END` : 'NULL'},
        ${created}, ${created}, ${created}, ${created} ${series}`, ids);
    await runner.query(`INSERT INTO spark_holds (account_id, action_id, amount, status, created_at, settled_at)
      SELECT ${accountOf.sql}, ${base} + g, 5, 'charged', ${created}, ${created} ${series}`, ids);
    await runner.query(`INSERT INTO spark_ledger (account_id, amount, kind, reference, action_id, created_at)
      SELECT ${accountOf.sql}, -5, 'charge', 'action:' || (${base} + g), ${base} + g, ${created} ${series}`, ids);
    // One in ten is a v2 job's action, succeeded.
    await runner.query(`INSERT INTO jobs (id, account_id, action_id, type, status, phase, attempts, provider, started_at, completed_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${accountOf.sql}, ${base} + g, 'generation.execute', 'succeeded', 'completed', 1, 'local', ${created}, ${created}, ${created}, ${created}
      ${series} WHERE g % 10 = 5`, ids);
    await runner.query(`INSERT INTO action_events (action_id, seq, action_status, created_at)
      SELECT ${base} + g, s.seq, s.status, ${created} ${series}, (VALUES (1, 'pending'), (2, 'processing'), (3, 'completed')) AS s(seq, status)`);
    for (const table of ['projects', 'cards', 'actions']) {
      await runner.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), (SELECT max(id) FROM ${table}))`);
    }
    await runner.commitTransaction();
  } catch (err) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    throw err;
  } finally {
    await runner.query('SET session_replication_role = origin').catch(() => undefined);
    await runner.release();
  }
}

interface Measured { accountKey: string; actionId: number; jobId: string }

/**
 * The measured account: its actions and projects seeded, one in ten a v2 job's (one of them is the polled job).
 * Nothing of it is open: an open action would be looked at by the reconciler's pass once older than its grace, in
 * the large measurement (minutes later) and not in the small one, and measure Temporal instead of the database.
 */
async function seedMeasuredAccount(ctx: ServiceContext): Promise<Measured> {
  const { accountId, apiKey } = await newAccount(ctx.db, 100_000_000, 'bench large measured');
  await insertActions(ctx.db, [accountId], OWN_ACTIONS, { group: OWN_ACTIONS / 200 });
  const [{ id: jobId }] = await ctx.db.query('SELECT max(id::text) AS id FROM jobs WHERE account_id = $1', [accountId]);
  // A completed action with its events (seeded), whose stream ends after its last event.
  const [{ id }] = await ctx.db.query(`SELECT max(id) AS id FROM actions WHERE account_id = $1 AND status = 'completed'`, [accountId]);
  return { accountKey: apiKey, actionId: id, jobId };
}

/** The median of `runs` sequential runs of `work`, in ms. */
async function medianMs(runs: number, work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await work();
    times.push(performance.now() - t);
  }
  return stat(times)!.median;
}

/** A completed action's whole stream (`Last-Event-ID: 0`): every event, then the server closes it. */
function catchUp(url: string, apiKey: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { Authorization: `Bearer ${apiKey}`, 'Last-Event-ID': '0' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`live progress: ${res.statusCode}`));
      res.resume();
      res.on('end', () => resolve()).on('error', reject);
    });
    req.on('error', reject);
  });
}

/**
 * After a seed, before measuring: the planner's statistics and the visibility map made current (VACUUM ANALYZE), and
 * the seed's dirty pages written out (CHECKPOINT), so that the figures do not share the machine with the writeback of
 * a million rows the harness just made (the checkpointer would otherwise write them during the measurements).
 */
async function settle(db: DataSource): Promise<void> {
  await db.query('VACUUM ANALYZE');
  await db.query('CHECKPOINT');
}

/** One of the two databases the figures compare, with its own API process and its measured account. */
interface Side { size: 'small' | 'large'; ctx: ServiceContext; apiUrl: string; m: Measured }

/**
 * Every figure on both databases in turn, repetition by repetition (the order alternating), so that a ratio compares
 * figures taken seconds apart on the same machine in the same state rather than minutes apart.
 */
async function measureInTurn(sides: Side[], temporal: TemporalClient, figures: Figures): Promise<void> {
  const s = sides[0].ctx.settings;
  // Which goes first alternates with each repetition and with each figure, so that neither database is first more often.
  let turn = 0;
  const bothInTurn = async (each: (side: Side) => Promise<void>) => {
    for (const side of inTurn(sides, turn++)) await each(side);
  };
  const polls: [string, (m: Measured) => string][] = [
    ['status', (m) => `${V1}/status/${m.actionId}`], ['job', (m) => `/api/v2/jobs/${m.jobId}`], ['balance', () => `${V1}/balance`],
  ];
  for (const [key, route] of polls) {
    const load = (side: Side, durationSec: number) => httpLoad({
      url: `${side.apiUrl}${route(side.m)}`, connections: s.connections, durationSec, headers: { Authorization: `Bearer ${side.m.accountKey}` },
    });
    for (const side of sides) await load(side, 1); // warm
    for (let r = 0; r < s.repeats; r++) await bothInTurn(async (side) => recordLoad(figures, `large.${key}.${side.size}`, await load(side, s.durationSec)));
  }
  const works = await Promise.all(sides.map(async (side) => {
    const call = apiClient(side.apiUrl, side.m.accountKey);
    const expectOk = async (route: string) => {
      const res = await call('GET', route);
      if (res.status !== 200) throw new Error(`GET ${route}: ${res.status}`);
      return res.body;
    };
    const total = (await expectOk(`${V1}/results?page_size=100`)).total as number;
    const deepest = `${V1}/results?page_size=100&page=${Math.ceil(total / 100)}`;
    const projects = (await expectOk(`${V1}/projects?limit=20`)).total as number;
    const lastProjects = `${V1}/projects?limit=20&offset=${Math.max(0, projects - 20)}`;
    const work: Record<string, () => Promise<unknown>> = {
      results_deepest: () => expectOk(deepest),
      results_group: () => expectOk(`${V1}/results?page_size=100&client_group_id=${GROUP}`),
      projects_last: () => expectOk(lastProjects),
      live_catch_up: () => catchUp(`${side.apiUrl}${V1}/status/${side.m.actionId}/events`, side.m.accountKey),
      reconciler_pass: () => reconcile(side.ctx.db, temporal, { taskQueue: 'bench-large', graceSeconds: 120, webhookRetryInitialMs: 10_000 }),
    };
    return work;
  }));
  for (const key of Object.keys(works[0])) {
    for (const work of works) await medianMs(5, work[key]); // warm
    const runs = key === 'reconciler_pass' ? 5 : 50;
    for (let r = 0; r < s.repeats; r++) {
      await bothInTurn(async (side) => recordValue(figures, `large.${key}.${side.size}`, await medianMs(runs, works[sides.indexOf(side)][key])));
    }
  }
}

/**
 * The small database (the measured account alone) and the large one (the same account, then grown to `total`
 * actions over `accounts` accounts), each served by an API process of its own, then every figure on both in turn:
 * records `large.<figure>.small` and `large.<figure>.large`.
 */
export async function measureLargeDatabase(
  small: ServiceContext, large: ServiceContext, figures: Figures, total: number, accounts: number,
): Promise<void> {
  const connection = await Connection.connect({ address: large.temporalAddress });
  try {
    const temporal = new TemporalClient({ connection, namespace: 'default' });
    const [smallMeasured, largeMeasured] = [await seedMeasuredAccount(small), await seedMeasuredAccount(large)];

    const [{ others }] = await large.db.query(`WITH made AS (
      INSERT INTO accounts (name, balance) SELECT 'bench large ' || g, 1000000 FROM generate_series(1, $1) g RETURNING id
    ) SELECT array_agg(id ORDER BY id) AS others FROM made`, [accounts - 1]);
    const t = performance.now();
    const [{ n: existing }] = await large.db.query('SELECT count(*)::int AS n FROM actions');
    const batch = 100_000;
    for (let done = existing; done < total; done += batch) {
      await insertActions(large.db, others, Math.min(batch, total - done));
    }
    recordValue(figures, 'large.seed_seconds', (performance.now() - t) / 1000);
    await settle(small.db);
    await settle(large.db);
    const [{ n }] = await large.db.query('SELECT count(*)::int AS n FROM actions');
    recordValue(figures, 'large.actions', n);

    const smallApi = await startService(small, 'api', 'api-large-small', 'bench-large');
    try {
      const largeApi = await startService(large, 'api', 'api-large-large', 'bench-large');
      try {
        await measureInTurn([
          { size: 'small', ctx: small, apiUrl: smallApi.url, m: smallMeasured },
          { size: 'large', ctx: large, apiUrl: largeApi.url, m: largeMeasured },
        ], temporal, figures);
      } finally {
        await largeApi.stop();
      }
    } finally {
      await smallApi.stop();
    }
  } finally {
    await connection.close();
  }
}
