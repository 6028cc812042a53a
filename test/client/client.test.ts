import assert from 'node:assert/strict';
import { createClient, ApiError, type ImageryClient, type LiveEvent } from '../../clients/typescript/src';
import { createWorker } from '../../app/worker';
import { actionWorkflowId } from '../../src/temporal/contract';
import { testEnvironment } from '../support/environment';
import { eventually, jpegBase64, moneyOf, newAccount } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/** Every request the client sends, through the real network, with what it sent (a fault may be put on one). */
function recordingFetch(fault?: (request: Request, attempt: number) => 'drop-after-send' | undefined) {
  const sent: { method: string; path: string; headers: Headers }[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    sent.push({ method: request.method, path: new URL(request.url).pathname, headers: new Headers(request.headers) });
    const response = await fetch(request);
    if (fault?.(request, sent.length) === 'drop-after-send') {
      await response.body?.cancel();
      throw new TypeError('fetch failed: the connection dropped after the request was sent'); // what fetch throws then
    }
    return response;
  };
  return { sent, fetch: fetchImpl };
}

describe('typed client, against the service', function () {
  this.timeout(120_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack();
    image = await jpegBase64();
  });
  after(() => stack.stop());

  async function account(sparks = 100, extra: Partial<Parameters<typeof createClient>[0]> = {}) {
    const created = await newAccount(stack.db, sparks);
    return { ...created, client: createClient({ baseUrl: stack.baseUrl, apiKey: created.apiKey, ...extra }) };
  }
  const photo = { images: [{ data: '' }], product_name: 'Cup', category_id: 'home', resolution: '1K' } as const;

  it('generates a photo and waits for it on its live progress, typed end to end', async () => {
    const { client } = await account();
    const accepted = await client.post('/api/v1/public/generate/photo', { body: { ...photo, images: [{ data: image }] } });
    assert.equal(typeof accepted.action_id, 'number');
    const events: LiveEvent[] = [];
    const done = await client.wait(accepted.action_id, { onEvent: (e) => events.push(e), timeoutMs: 60_000 });
    assert.equal(done.status, 'completed');
    assert.match(done.result_url ?? '', /^http/);
    assert.equal(events.at(-1)?.name, 'completed');
    assert.ok(events.every((e) => e.id !== ''), 'each event has its id');
    const balance = await client.get('/api/v1/public/balance');
    assert.equal(typeof balance.balance, 'number');
  });

  it('creates a v2 job and waits for it to succeed', async () => {
    const { client } = await account();
    const job = await client.post('/api/v2/jobs/generate', { body: { ...photo, images: [{ data: image }] } });
    const done = await client.wait(job.job_id, { timeoutMs: 60_000 });
    assert.equal(done.status, 'succeeded');
    assert.equal(done.check_again_in_sec, null);
    assert.match(done.result?.result_url ?? '', /^http/);
  });

  it('sends one Idempotency-Key per call and the same on its retry: a call whose answer was lost is done once', async () => {
    const { accountId, apiKey } = await account();
    const recorder = recordingFetch((request, attempt) => (request.method === 'POST' && attempt === 1 ? 'drop-after-send' : undefined));
    const client = createClient({ baseUrl: stack.baseUrl, apiKey, fetch: recorder.fetch, retry: { baseDelayMs: 10 } });
    const accepted = await client.post('/api/v1/public/generate/photo', { body: { ...photo, images: [{ data: image }] } });
    const posts = recorder.sent.filter((r) => r.method === 'POST');
    assert.equal(posts.length, 2, 'the lost answer was asked for again');
    const keys = posts.map((p) => p.headers.get('idempotency-key'));
    assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(keys[1], keys[0], 'the retry carried the first key');
    await stack.temporal.workflow.getHandle(actionWorkflowId(accepted.action_id)).result();
    const actions = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(actions[0].n, 1, 'one action for the two sends');
    const [money] = await moneyOf(stack.db, [accountId]);
    assert.equal(money.held, 0);
    // A second logical call has a key of its own.
    await client.post('/api/v1/public/generate/photo', { body: { ...photo, images: [{ data: image }] } });
    const third = recorder.sent.filter((r) => r.method === 'POST').at(-1)!.headers.get('idempotency-key');
    assert.notEqual(third, keys[0]);
  });

  it('never sends a call again after a lost answer when it takes no Idempotency-Key', async () => {
    const { apiKey } = await account();
    const recorder = recordingFetch((request) => (request.method === 'POST' ? 'drop-after-send' : undefined));
    const client = createClient({ baseUrl: stack.baseUrl, apiKey, fetch: recorder.fetch, retry: { baseDelayMs: 10 } });
    await assert.rejects(client.post('/api/v1/public/projects', { body: { name: 'Once' } }), /connection dropped/);
    assert.equal(recorder.sent.length, 1);
    assert.equal(recorder.sent[0].headers.get('idempotency-key'), null, 'no key where the service takes none');
  });

  it('throws typed errors with detail.error, details and the X-Request-Id', async () => {
    const { client } = await account(0);
    const poor = await client.post('/api/v1/public/generate/photo', { body: { ...photo, images: [{ data: image }] } }).catch((e: unknown) => e);
    assert.ok(poor instanceof ApiError);
    assert.equal(poor.status, 402);
    assert.equal(poor.code, 'insufficient_tokens');
    assert.deepEqual(Object.keys(poor.details ?? {}).sort(), ['available', 'required']);
    assert.match(poor.requestId ?? '', /\S/);
    const missing = await client.get('/api/v1/public/status/{action_id}', { params: { path: { action_id: 2_000_000_000 } } }).catch((e: unknown) => e);
    assert.ok(missing instanceof ApiError);
    assert.equal(missing.code, 'not_found');
    const invalid = await client.post('/api/v1/public/generate/photo', { body: { images: [] } }).catch((e: unknown) => e);
    assert.ok(invalid instanceof ApiError);
    assert.equal(invalid.status, 422);
    assert.equal(invalid.code, 'invalid_request');
    assert.ok(Array.isArray(invalid.details) && invalid.details.length > 0);
  });

  it('turns a rate limit into an ApiError when the window resets later than it will wait', async () => {
    const limited = await startStack({ withWorker: false, rateLimitPerMinute: 2 });
    try {
      const created = await newAccount(limited.db, 10);
      const client = createClient({ baseUrl: limited.baseUrl, apiKey: created.apiKey, retry: { maxDelayMs: 50 } });
      await client.get('/api/v1/public/balance');
      await client.get('/api/v1/public/balance');
      const refused = await client.get('/api/v1/public/balance').catch((e: unknown) => e);
      assert.ok(refused instanceof ApiError);
      assert.equal(refused.status, 429);
      assert.equal(refused.code, 'rate_limit_exceeded');
    } finally {
      await limited.stop();
    }
  });

  describe('wait', () => {
    it('rejects at its timeout, and when its signal aborts', async () => {
      const idle = await startStack({ withWorker: false });
      try {
        const created = await newAccount(idle.db, 100);
        const client = createClient({ baseUrl: idle.baseUrl, apiKey: created.apiKey });
        const { action_id } = await client.post('/api/v1/public/generate/photo', { body: { ...photo, images: [{ data: image }] } });
        await assert.rejects(client.wait(action_id, { timeoutMs: 300 }), (err: Error) => err.name === 'TimeoutError');
        const stop = new AbortController();
        const waiting = client.wait(action_id, { signal: stop.signal });
        stop.abort(new Error('no longer needed'));
        await assert.rejects(waiting, /no longer needed/);
      } finally {
        await idle.stop();
      }
    });

    it('resumes an ended stream with Last-Event-ID', async () => {
      // Streams end after a second here, and the work starts only once the client came back with its last event id.
      const idle = await startStack({ withWorker: false, liveStreams: { maxSeconds: 1 } });
      let worker: Awaited<ReturnType<typeof createWorker>> | undefined;
      let running: Promise<void> | undefined;
      try {
        const created = await newAccount(idle.db, 100);
        const recorder = recordingFetch();
        const client: ImageryClient = createClient({ baseUrl: idle.baseUrl, apiKey: created.apiKey, fetch: recorder.fetch });
        const { action_id } = await client.post('/api/v1/public/generate/photo', { body: { ...photo, images: [{ data: image }] } });
        const waiting = client.wait(action_id, { timeoutMs: 60_000 });
        const streams = () => recorder.sent.filter((r) => r.path.endsWith('/events'));
        await eventually(async () => streams().length, (n) => n >= 2);
        assert.equal(streams()[0].headers.get('last-event-id'), null);
        assert.match(streams()[1].headers.get('last-event-id') ?? '', /^\d+$/, 'the second stream resumes after the last event');
        worker = await createWorker({ address: testEnvironment().temporalAddress, namespace: 'default', taskQueue: idle.taskQueue, deps: idle.deps, workflowBundle: testEnvironment().workflowBundle });
        running = worker.worker.run();
        assert.equal((await waiting).status, 'completed');
      } finally {
        worker?.worker.shutdown();
        await running;
        await worker?.connection.close();
        await idle.stop();
      }
    });

    it('falls back to polling when the service refuses the stream', async () => {
      const refusing = await startStack({ liveStreams: { perKey: 0 } });
      try {
        const created = await newAccount(refusing.db, 100);
        const recorder = recordingFetch();
        const client = createClient({ baseUrl: refusing.baseUrl, apiKey: created.apiKey, fetch: recorder.fetch, retry: { retries: 0 } });
        const job = await client.post('/api/v2/jobs/generate', { body: { ...photo, images: [{ data: image }] } });
        const done = await client.wait(job.job_id, { timeoutMs: 60_000 });
        assert.equal(done.status, 'succeeded');
        assert.ok(recorder.sent.some((r) => r.path.endsWith('/events')), 'the stream was asked for');
        assert.ok(recorder.sent.filter((r) => r.path === `/api/v2/jobs/${job.job_id}`).length >= 1, 'and the job polled');
      } finally {
        await refusing.stop();
      }
    });
  });
});
