import assert from 'node:assert/strict';
import { purgeFeed } from '../../src/events/feed';
import { actionWorkflowId } from '../../src/temporal/contract';
import { apiClient, eventually, jpegBase64, newAccount, placeAction, V1 } from '../support/fixtures';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { Stack, startStack } from '../support/stack';

const V2 = '/api/v2';
type Feed = { events: { cursor: string; type: string; status: string; action_id?: number; job_id?: string; phase?: string | null; delivery_id?: string }[]; next_cursor: string | null };

describe('account event feed', function () {
  this.timeout(120_000);
  let stack: Stack;
  let receiver: TestHttpsServer;
  let image: string;
  before(async () => {
    stack = await startStack({ webhookRetryInitialMs: 100 });
    receiver = await startHttpsServer((_req, res) => {
      res.writeHead(200).end();
    });
    image = await jpegBase64(320, 320);
  });
  after(async () => {
    await receiver.close();
    await stack.stop();
  });

  async function account() {
    const created = await newAccount(stack.db, 100);
    return { ...created, call: apiClient(stack.baseUrl, created.apiKey) };
  }
  const feed = async (call: ReturnType<typeof apiClient>, path: string): Promise<Feed> => {
    const res = await call('GET', path);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };

  it('v1: every status of the account\'s actions and each delivery\'s outcome, in order, paged without loss or repeat', async () => {
    const { call } = await account();
    const empty = await feed(call, `${V1}/events`);
    assert.deepEqual(empty.events, []);
    assert.match(empty.next_cursor ?? '', /^[A-Za-z0-9_-]+$/, 'a cursor to poll with, even before any event');
    assert.equal((await call('POST', `${V1}/webhooks`, { url: `${receiver.url}/feed` })).status, 201);
    const { body: { action_id } } = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] });
    await stack.temporal.workflow.getHandle(actionWorkflowId(action_id)).result();
    const all = await eventually(() => feed(call, `${V1}/events`), (f) => f.events.some((e) => e.type === 'webhook.succeeded'));
    assert.deepEqual(all.events.map((e) => e.type), ['action.pending', 'action.processing', 'action.completed', 'webhook.succeeded']);
    assert.deepEqual(all.events.slice(0, 3).map((e) => (e as { seq?: number }).seq), [1, 2, 3], 'each change numbered within its action');
    assert.deepEqual((await feed(call, `${V1}/events?after=${empty.next_cursor}`)).events.map((e) => e.type), all.events.map((e) => e.type), 'the empty feed\'s cursor skipped nothing');
    assert.ok(all.events.every((e) => e.action_id === action_id));
    assert.match(all.events[3].delivery_id ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(all.next_cursor, all.events[3].cursor);
    // One at a time, the same events; after the last, none, and the same cursor to ask again with.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page: Feed = await feed(call, `${V1}/events?limit=1${cursor ? `&after=${cursor}` : ''}`);
      seen.push(...page.events.map((e) => e.type));
      cursor = page.next_cursor;
    }
    assert.deepEqual(seen, all.events.map((e) => e.type));
    assert.deepEqual((await feed(call, `${V1}/events?after=${cursor}`)).events, [], 'nothing after the end');
  });

  it('v2: the account\'s jobs by job_id, with their phases, and nothing of v1 actions; another account sees none of it', async () => {
    const { call } = await account();
    const v1 = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] });
    const job = await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }] });
    assert.equal(job.status, 202);
    await eventually(() => feed(call, `${V2}/events`), (f) => f.events.some((e) => e.type === 'job.succeeded'));
    await stack.temporal.workflow.getHandle(actionWorkflowId(v1.body.action_id)).result();
    const jobs = await feed(call, `${V2}/events`);
    assert.ok(jobs.events.every((e) => e.job_id === job.body.job_id), 'v2: only the job');
    assert.equal(jobs.events[0].type, 'job.queued');
    assert.equal(jobs.events.at(-1)!.type, 'job.succeeded');
    assert.ok(jobs.events.some((e) => e.phase && e.phase !== 'queued'), 'its phases too');
    const actions = await feed(call, `${V1}/events`);
    assert.ok(actions.events.some((e) => e.action_id === v1.body.action_id));
    const other = await account();
    assert.deepEqual((await feed(other.call, `${V1}/events`)).events, []);
    assert.deepEqual((await feed(other.call, `${V2}/events`)).events, []);
    // Another account's cursor is only a position: it shows that account's events, none of these.
    assert.deepEqual((await feed(other.call, `${V1}/events?after=${actions.events[0].cursor}`)).events, []);
  });

  it('holds back a committed change while an older transaction is still open, then gives both in order', async () => {
    const { accountId, call } = await account();
    const [a1, a2] = [await placeAction(stack.db, accountId), await placeAction(stack.db, accountId)];
    const start = (await feed(call, `${V1}/events`)).next_cursor!;
    const older = stack.db.createQueryRunner();
    await older.connect();
    try {
      await older.startTransaction();
      await older.query(`UPDATE actions SET status = 'processing' WHERE id = $1`, [a1]); // its xid is the older one
      await stack.db.query(`UPDATE actions SET status = 'processing' WHERE id = $1`, [a2]); // committed at once
      assert.deepEqual((await feed(call, `${V1}/events?after=${start}`)).events, [], 'the younger commit waits for the older transaction');
      await older.commitTransaction();
    } finally {
      await older.release();
    }
    const after = await feed(call, `${V1}/events?after=${start}`);
    assert.deepEqual(after.events.map((e) => [e.action_id, e.type]), [[a1, 'action.processing'], [a2, 'action.processing']]);
  });

  it('answers 422 for a cursor it did not give and a limit outside 1-500', async () => {
    const { call } = await account();
    const forged = (text: string) => `after=${Buffer.from(text).toString('base64url')}`;
    for (const query of ['after=nonsense', 'after=MTIz', forged('1.2 '), forged('010.1'), forged('1.9999999999999999999'), forged('99999999999999999999.1'), 'limit=0', 'limit=501', 'limit=x']) {
      const res = await call('GET', `${V1}/events?${query}`);
      assert.equal(res.status, 422, query);
      assert.equal((await call('GET', `${V2}/events?${query}`)).status, 422, query);
    }
  });

  it('keeps 30 days: a cursor from before the purged part answers 410 with the oldest valid cursor', async () => {
    const { accountId, call } = await account();
    const action = await placeAction(stack.db, accountId);
    const first = (await feed(call, `${V1}/events`)).events[0].cursor;
    await stack.db.query(`UPDATE actions SET status = 'processing' WHERE id = $1`, [action]);
    // Everything so far is made old (the purge takes a prefix of the feed's order), then purged.
    await stack.db.query(`UPDATE account_events SET created_at = created_at - interval '31 days'`);
    assert.ok(await purgeFeed(stack.db) >= 2);
    const expired = await call('GET', `${V1}/events?after=${first}`);
    assert.equal(expired.status, 410);
    assert.equal(expired.body.detail.error, 'cursor_expired');
    const { oldest_cursor: oldest } = expired.body.detail.details;
    await stack.db.query(`UPDATE actions SET status = 'completed' WHERE id = $1`, [action]);
    const resumed = await feed(call, `${V1}/events?after=${oldest}`);
    assert.deepEqual(resumed.events.map((e) => e.type), ['action.completed']);
    assert.deepEqual((await feed(call, `${V1}/events`)).events.map((e) => e.type), ['action.completed'], 'from the oldest kept');
  });
});
