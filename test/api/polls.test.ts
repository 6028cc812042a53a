import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, type QueryConfig } from 'pg';
import type { DataSource } from 'typeorm';
import { CountedKeyLookup } from '../../api/middleware/counted-key-lookup';
import { hashApiKey, revokeKey } from '../../src/accounts/accounts';
import { actionStatusReader } from '../../src/actions/store';
import { jobReader } from '../../src/jobs/store';
import { apiClient, clearOfRateWindowEdge, newAccount, V1 } from '../support/fixtures';
import { Stack, startApiPair } from '../support/stack';

const V2 = '/api/v2';

/** A completed action with a v2 job over it, written straight into the read models (no workflow needed to poll). */
async function completedJob(db: DataSource, accountId: number): Promise<{ actionId: number; jobId: string }> {
  const [project] = await db.query(`INSERT INTO projects (account_id, source, name) VALUES ($1, 'api_v2', 'polls') RETURNING id`, [accountId]);
  const [card] = await db.query(
    `INSERT INTO cards (account_id, project_id, status, content_type, aspect_ratio) VALUES ($1, $2, 'completed', 'photo', '3:4') RETURNING id`,
    [accountId, project.id]);
  const [action] = await db.query(
    `INSERT INTO actions (account_id, project_id, card_id, type, product, status, price, params, asset_path, completed_at)
     VALUES ($1, $2, $3, 'generate', 'photo', 'completed', 5, '{}', 'results/polls/result.jpg', now()) RETURNING id`,
    [accountId, project.id, card.id]);
  const jobId = randomUUID();
  await db.query(`INSERT INTO jobs (id, account_id, action_id, type, status, phase) VALUES ($1, $2, $3, 'generation.execute', 'succeeded', 'completed')`,
    [jobId, accountId, action.id]);
  return { actionId: action.id, jobId };
}

/** Runs `run` while recording what every pg client of this process sends: a prepared statement's name, else its SQL. */
async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, config: string | QueryConfig, ...rest: unknown[]) {
    sent.push(typeof config === 'string' ? config : config.name ?? config.text);
    return (original as (...args: unknown[]) => unknown).call(this, config, ...rest);
  } as typeof original;
  try {
    await run();
  } finally {
    Client.prototype.query = original;
  }
  // The fire-and-forget purge of a key's old windows (first request of a window) is not part of the answer.
  return sent.filter((s) => !/^DELETE FROM rate_limit_windows/.test(s));
}

describe('polls: the key, its count and the read', () => {
  let first: Stack;
  let second: Stack;
  before(async () => {
    [first, second] = await startApiPair(25);
  });
  after(async () => {
    await first.stop();
    await second.stop();
  });

  it('a poll is two statements: the key with its rate count, then one prepared read', async () => {
    const { accountId, apiKey } = await newAccount(first.db);
    const { actionId, jobId } = await completedJob(first.db, accountId);
    const call = apiClient(first.baseUrl, apiKey);
    await clearOfRateWindowEdge(3);
    assert.equal((await call('GET', `${V1}/pricing`)).status, 200); // opens the key's window
    const polls: [string, string][] = [
      [`${V1}/status/${actionId}`, 'action_statuses'], [`${V2}/jobs/${jobId}`, 'jobs_with_actions'], [`${V1}/balance`, 'account_balance'],
    ];
    for (const [path, read] of polls) {
      let status = 0;
      const sent = await statementsOf(async () => {
        status = (await call('GET', path)).status;
      });
      assert.equal(status, 200, path);
      assert.deepEqual(sent, ['api_keys_and_rate_counts', read], path);
    }
    const status = await call('GET', `${V1}/status/${actionId}`);
    assert.equal(status.body.status, 'completed');
    assert.match(status.body.result_url, /\/assets\/results\/polls\/result\.jpg\?expires=\d+&signature=[0-9a-f]{64}$/);
    const job = await call('GET', `${V2}/jobs/${jobId}`);
    assert.deepEqual([job.body.status, job.body.result.action_id, job.body.resource_id], ['succeeded', actionId, actionId]);
    const upper = await call('GET', `${V2}/jobs/${jobId.toUpperCase()}`);
    assert.deepEqual([upper.status, upper.body.job_id], [200, jobId]);
  });

  it('reads of polls that arrive together share a statement, each answered with its own row', async () => {
    const own = await newAccount(first.db);
    const other = await newAccount(first.db);
    const mine = await Promise.all([completedJob(first.db, own.accountId), completedJob(first.db, own.accountId)]);
    const theirs = await completedJob(first.db, other.accountId);
    const readStatus = actionStatusReader(first.db);
    const readJob = jobReader(first.db);
    const actionIds = [mine[0].actionId, mine[1].actionId, theirs.actionId, 2_147_483_647, mine[0].actionId];
    const jobIds = [mine[0].jobId, theirs.jobId, randomUUID(), mine[1].jobId, mine[1].jobId];
    let statuses: Awaited<ReturnType<typeof readStatus>>[] = [];
    let jobs: Awaited<ReturnType<typeof readJob>>[] = [];
    const sent = await statementsOf(async () => {
      [statuses, jobs] = await Promise.all([
        Promise.all([...actionIds, ...actionIds].map(readStatus)), Promise.all([...jobIds, ...jobIds].map(readJob)),
      ]);
    });
    // Of each reader, the first two calls started a statement each at once; the eight that arrived meanwhile shared a third.
    assert.deepEqual(sent.filter((s) => s === 'action_statuses').length, 3);
    assert.deepEqual(sent.filter((s) => s === 'jobs_with_actions').length, 3);
    assert.deepEqual(statuses.map((row) => row && [row.id, row.account_id]), [...actionIds, ...actionIds].map((id) =>
      (id === theirs.actionId ? [id, other.accountId] : id === 2_147_483_647 ? undefined : [id, own.accountId])));
    assert.deepEqual(jobs.map((row) => row && [row.id, row.account_id, row.action_id]), [...jobIds, ...jobIds].map((id) =>
      (id === theirs.jobId ? [id, other.accountId, theirs.actionId] : mine.find((m) => m.jobId === id) ? [id, own.accountId, mine.find((m) => m.jobId === id)!.actionId] : undefined)));
  });

  it('a read that fails fails its own statement\'s calls only', async () => {
    const { accountId } = await newAccount(first.db);
    const { actionId } = await completedJob(first.db, accountId);
    const readStatus = actionStatusReader(first.db);
    // Out of int4 (a route's schema never lets one through): the statement of the first call fails, alone.
    const answers = await Promise.allSettled([readStatus(2 ** 31), readStatus(actionId), readStatus(actionId)]);
    assert.equal(answers[0].status, 'rejected');
    assert.deepEqual(answers.slice(1).map((a) => a.status === 'fulfilled' && a.value?.id), [actionId, actionId]);
    assert.equal((await readStatus(actionId))?.id, actionId);
  });

  it('a key revoked through the operator path is refused at once by both instances that were serving it', async () => {
    const { apiKey, keyId } = await newAccount(first.db);
    const viaFirst = apiClient(first.baseUrl, apiKey);
    const viaSecond = apiClient(second.baseUrl, apiKey);
    assert.deepEqual([(await viaFirst('GET', `${V1}/balance`)).status, (await viaSecond('GET', `${V1}/balance`)).status], [200, 200]);
    // Requests of the key in flight on both while it is revoked: whatever they answer, the next ones are refused.
    const inFlight = [...Array.from({ length: 10 }, () => viaFirst('GET', `${V1}/balance`)), ...Array.from({ length: 10 }, () => viaSecond('GET', `${V1}/balance`))];
    await revokeKey(first.db, keyId);
    const after = [await viaSecond('GET', `${V1}/balance`), await viaFirst('GET', `${V1}/balance`)];
    assert.deepEqual(after.map((r) => [r.status, r.body.detail.error]), [[401, 'invalid_api_key'], [401, 'invalid_api_key']]);
    for (const res of await Promise.all(inFlight)) assert.ok([200, 401].includes(res.status), String(res.status));
  });

  it('keeps the limit exact across two instances under concurrency: each number of the window given once', async () => {
    const { apiKey, keyId } = await newAccount(first.db);
    const viaFirst = apiClient(first.baseUrl, apiKey);
    const viaSecond = apiClient(second.baseUrl, apiKey);
    await clearOfRateWindowEdge(10);
    const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? viaSecond : viaFirst)('GET', `${V1}/balance`)));
    const ok = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    assert.deepEqual([ok.length, refused.length], [25, 55]);
    assert.deepEqual(ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b), Array.from({ length: 25 }, (_, i) => i));
    for (const res of refused) {
      assert.equal(res.body.detail.error, 'rate_limit_exceeded');
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
      assert.equal(res.headers.get('x-ratelimit-limit'), '25');
    }
    const [row] = await first.db.query('SELECT sum(count)::int AS total FROM rate_limit_windows WHERE key_id = $1', [keyId]);
    assert.equal(row.total, 80, 'every request counted once');
  });

  it('counts requests that arrive while statements run together, numbered in arrival order, never for an unknown key', async () => {
    const busy = await newAccount(first.db);
    const other = await newAccount(first.db);
    const lookup = new CountedKeyLookup(first.db);
    await clearOfRateWindowEdge(3);
    const keys = [busy.apiKey, busy.apiKey, ...Array.from({ length: 8 }, (_, i) => (i % 4 === 3 ? other.apiKey : i % 4 === 2 ? 'ak_unknown' : busy.apiKey))];
    let found: Awaited<ReturnType<CountedKeyLookup['lookup']>>[] = [];
    const sent = await statementsOf(async () => {
      found = await Promise.all(keys.map((key) => lookup.lookup(hashApiKey(key))));
    });
    // Two statements ran at once for the first two requests; the eight that arrived meanwhile shared the third.
    assert.deepEqual(sent, ['api_keys_and_rate_counts', 'api_keys_and_rate_counts', 'api_keys_and_rate_counts']);
    // Statements that run at once may commit in either order; the numbers of a key are still each given once, and one
    // statement numbers its requests of a key consecutively in arrival order.
    const busyNumbers = found.filter((f) => f?.key.id === busy.keyId).map((f) => f!.used);
    assert.deepEqual([...busyNumbers].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6]);
    const shared = found.slice(2);
    const sharedBusy = shared.filter((f) => f?.key.id === busy.keyId).map((f) => f!.used);
    assert.deepEqual(sharedBusy, sharedBusy.map((_, i) => sharedBusy[0] + i));
    assert.deepEqual(shared.map((f) => (f ? f.key.id : null)),
      [busy.keyId, busy.keyId, null, other.keyId, busy.keyId, busy.keyId, null, other.keyId]);
    assert.deepEqual([shared[3]!.used, shared[7]!.used], [1, 2]);
  });
});
