/**
 * Live progress over Server-Sent Events (`GET /status/{action_id}/events`, `GET /jobs/{job_id}/events`): real API,
 * real Temporal, real Postgres. Each stream is compared with the action's event log (`action_events`), which the
 * triggers fill from the read-model writes: a stream must carry every event of the log, in order, once.
 */
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { OutboundPolicy } from '../../src/net/outbound';
import { allFrom } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { RunwayProvider } from '../../src/providers/runway';
import { RunwayServer, startRunwayServer } from '../support/runway-server';
import { ProviderError } from '../../src/providers/provider';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { ScriptedProvider } from '../support/providers';
import { openSse, SseEvent, SseStream } from '../support/sse-client';
import { Stack, startApiPair, startStack } from '../support/stack';

const V2 = '/api/v2';

/** The log of an action as `(seq, action status, job status, phase, attempt)`. */
async function logOf(stack: Stack, actionId: number) {
  return stack.db.query('SELECT seq, action_status, job_status, phase, attempt FROM action_events WHERE action_id = $1 ORDER BY seq', [actionId]);
}

/** What a finished stream shows: ids strictly increasing, nothing after the final event, the server ended it. */
async function assertWhole(stream: SseStream, finalName: string): Promise<SseEvent[]> {
  await stream.ended;
  const ids = stream.events.map((e) => Number(e.id));
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids in order');
  assert.equal(new Set(ids).size, ids.length, 'no id twice');
  assert.equal(stream.events.at(-1)!.event, finalName, JSON.stringify(stream.events));
  assert.ok(stream.events.slice(0, -1).every((e) => e.event === 'progress'), 'only the last event is final');
  return stream.events;
}

describe('live progress (Server-Sent Events)', function () {
  this.timeout(120_000);

  describe('a photo, start to end', () => {
    let stack: Stack;
    before(async () => { stack = await startStack({ provider: new LocalRenderer({ delayMs: 1500 }), liveStreams: { heartbeatSeconds: 0.2 } }); });
    after(() => stack.stop());

    it('v1: every transition of the action in order, live, heartbeats, the result URL at the end, then the stream closes', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const action = (await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      const stream = await openSse(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` });
      assert.equal(stream.status, 200);
      assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
      assert.equal(stream.headers['cache-control'], 'no-cache, no-transform');
      assert.ok(stream.headers['x-ratelimit-remaining'], 'counted against the rate limit like a poll');
      // Live: the stream sees processing while the render is still under way (the workflow has not ended).
      await stream.waitFor((e) => e.data.status === 'processing');
      await stream.waitForComments(1); // a heartbeat while nothing moves
      assert.ok(stream.comments.includes('heartbeat'));
      const events = await assertWhole(stream, 'completed');
      const log = await logOf(stack, action.action_id);
      assert.deepEqual(events.map((e) => [Number(e.id), e.data.status]), log.map((r: { seq: number; action_status: string }) => [r.seq, r.action_status]), 'the whole log, once, in order');
      assert.deepEqual([...new Set(events.map((e) => e.data.status))], ['pending', 'processing', 'completed']);
      const done = events.at(-1)!.data;
      assert.equal(done.action_id, action.action_id);
      assert.equal(done.provider, 'local');
      assert.equal(done.percent, 100);
      assert.equal(done.error_message, null);
      assert.equal((await fetch(done.result_url)).status, 200, 'a fresh signed result URL');
      assert.ok(Date.parse(done.result_url_expires_at) > Date.now());

      // A stream opened after the end replays the same log and closes at once.
      const late = await openSse(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` });
      assert.deepEqual((await assertWhole(late, 'completed')).map((e) => e.id), events.map((e) => e.id));
      // An EventSource reconnecting after the final event (its Last-Event-ID) gets 204: it stops reconnecting.
      const reconnect = await fetch(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, { headers: { Authorization: `Bearer ${apiKey}`, 'Last-Event-ID': events.at(-1)!.id } });
      assert.equal(reconnect.status, 204);
      assert.equal(await reconnect.text(), '');
    });

    it('resumes after a dropped connection with Last-Event-ID (header or query), without losing or repeating an event', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const auth = { Authorization: `Bearer ${apiKey}` };
      const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: await jpegBase64() }] })).body;
      const url = `${stack.baseUrl}${V2}/jobs/${job.job_id}/events`;
      const first = await openSse(url, auth);
      await first.waitFor((e) => e.data.status === 'claimed');
      first.drop();
      const seen = [...first.events];
      const lastId = seen.at(-1)!.id;
      // The server lets the dropped stream go; events are written while nobody listens.
      await eventually(async () => stack.services.liveEvents.size, (n) => n === 0);
      await eventually(async () => (await logOf(stack, job.resource_id)).length, (n) => n > Number(lastId) + 1);
      const resumed = await openSse(url, { ...auth, 'Last-Event-ID': lastId });
      const rest = await assertWhole(resumed, 'succeeded');
      assert.ok(Number(rest[0].id) > Number(lastId), 'nothing repeated');
      const all = [...seen, ...rest];
      // The stream ends at `succeeded`; the `completed` phase that follows may already be in the log, after it.
      const log = (await logOf(stack, job.resource_id)).filter((r: { job_status: string | null; seq: number }) => r.job_status !== null && r.seq <= Number(rest.at(-1)!.id));
      assert.deepEqual(all.map((e) => `${e.id} ${e.data.status}/${e.data.phase}/${e.data.attempt}`),
        log.map((r: { seq: number; job_status: string; phase: string; attempt: number }) => `${r.seq} ${r.job_status}/${r.phase}/${r.attempt}`), 'nothing lost');
      assert.equal((await fetch(rest.at(-1)!.data.result_url)).status, 200);

      // The query parameter, for clients that cannot set a header; the header wins over it.
      const byQuery = await openSse(`${url}?last_event_id=${lastId}`, auth);
      assert.deepEqual((await assertWhole(byQuery, 'succeeded')).map((e) => e.id), rest.map((e) => e.id));
      const both = await openSse(`${url}?last_event_id=1`, { ...auth, 'Last-Event-ID': rest.at(-2)!.id });
      assert.deepEqual((await assertWhole(both, 'succeeded')).map((e) => e.id), [rest.at(-1)!.id]);
    });

    it('refuses a malformed Last-Event-ID (422), a missing key (401), another account (v1 403, v2 404)', async () => {
      const a = await newAccount(stack.db, 20);
      const b = await newAccount(stack.db, 20);
      const asA = apiClient(stack.baseUrl, a.apiKey);
      const action = (await asA('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      const job = (await asA('POST', `${V2}/jobs/generate`, { images: [{ data: await jpegBase64() }] })).body;
      const v1 = `${stack.baseUrl}${V1}/status/${action.action_id}/events`;
      const v2 = `${stack.baseUrl}${V2}/jobs/${job.job_id}/events`;
      const answers = async (url: string, headers: Record<string, string>) => {
        const s = await openSse(url, headers);
        return [s.status, JSON.parse(s.text).detail?.error ?? JSON.parse(s.text).detail?.[0]?.type];
      };
      assert.deepEqual(await answers(v1, {}), [401, 'missing_authorization']);
      assert.deepEqual(await answers(v2, {}), [401, 'missing_authorization']);
      assert.deepEqual(await answers(v1, { Authorization: `Bearer ${b.apiKey}` }), [403, 'forbidden']);
      assert.deepEqual(await answers(v2, { Authorization: `Bearer ${b.apiKey}` }), [404, 'not_found']);
      assert.deepEqual(await answers(`${stack.baseUrl}${V2}/jobs/not-a-uuid/events`, { Authorization: `Bearer ${a.apiKey}` }), [404, 'not_found']);
      assert.deepEqual(await answers(`${stack.baseUrl}${V1}/status/999999999/events`, { Authorization: `Bearer ${a.apiKey}` }), [404, 'not_found']);
      assert.equal((await openSse(v1, { Authorization: `Bearer ${a.apiKey}`, 'Last-Event-ID': 'x' })).status, 422);
      assert.equal((await openSse(`${v2}?last_event_id=-1`, { Authorization: `Bearer ${a.apiKey}` })).status, 422);
      await stack.temporal.workflow.getHandle(actionWorkflowId(action.action_id)).result();
      await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result();
    });
  });

  describe('a v2 job with a retry', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ provider: new ScriptedProvider([new ProviderError('upstream 503', 'unavailable', true)]), jobRetryBackoffMs: 1000 });
    });
    after(() => stack.stop());

    it('streams every status, phase and attempt in order: the failure, retry_scheduled, the second attempt, succeeded', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: await jpegBase64() }] })).body;
      const stream = await openSse(`${stack.baseUrl}${V2}/jobs/${job.job_id}/events`, { Authorization: `Bearer ${apiKey}` });
      const events = await assertWhole(stream, 'succeeded');
      const moves = events.map((e) => `${e.data.status}/${e.data.phase}/${e.data.attempt}`);
      assert.deepEqual(moves, [
        'queued/queued/0', 'claimed/routing/0', 'running/provider_reserved/1', 'running/provider_running/1', 'retry_scheduled/provider_reserved/1',
        'running/provider_reserved/2', 'running/provider_running/2', 'running/finalizing/2', 'succeeded/postprocessing/2',
      ], 'every move, in the order the job moved, once');
      const log = (await logOf(stack, job.resource_id)).filter((r: { job_status: string | null }) => r.job_status !== null);
      assert.deepEqual(events.map((e) => Number(e.id)), log.map((r: { seq: number }) => r.seq).slice(0, events.length), 'every event of the log up to the end');
      const done = events.at(-1)!.data;
      assert.deepEqual([done.job_id, done.provider, done.error_code, done.retryable], [job.job_id, 'scripted', null, false]);
      assert.equal((await fetch(done.result_url)).status, 200);
    });
  });

  describe('a cancel', () => {
    let stack: Stack;
    before(async () => { stack = await startStack({ provider: new LocalRenderer({ delayMs: 30_000 }) }); });
    after(() => stack.stop());

    it('ends both streams of a running job (v1 and v2) with a cancelled event', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const call = apiClient(stack.baseUrl, apiKey);
      const auth = { Authorization: `Bearer ${apiKey}` };
      const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: await jpegBase64() }] })).body;
      const v2 = await openSse(`${stack.baseUrl}${V2}/jobs/${job.job_id}/events`, auth);
      const v1 = await openSse(`${stack.baseUrl}${V1}/status/${job.resource_id}/events`, auth);
      await v2.waitFor((e) => e.data.phase === 'provider_running');
      assert.equal((await call('POST', job.cancel_url)).body.message, 'Cancel requested');
      const events = await assertWhole(v2, 'cancelled');
      assert.deepEqual(events.at(-1)!.data.result_url, null);
      const actionEvents = await assertWhole(v1, 'cancelled');
      assert.deepEqual([...new Set(actionEvents.map((e) => e.data.status))], ['pending', 'processing', 'cancelled']);
      assert.equal(actionEvents.at(-1)!.data.phase, 'failed', 'the job\'s phase as the cancel left it');
    });
  });

  describe('across two API processes', () => {
    let one: Stack;
    let two: Stack;
    before(async () => { [one, two] = await startApiPair(10_000); });
    after(async () => { await one.stop(); await two.stop(); });

    it('a stream on one process sees what a request to the other wrote', async () => {
      const { apiKey } = await newAccount(one.db, 20);
      const auth = { Authorization: `Bearer ${apiKey}` };
      // No worker: the action stays pending until the other process cancels it.
      const action = (await apiClient(one.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      const stream = await openSse(`${two.baseUrl}${V1}/status/${action.action_id}/events`, auth);
      await stream.waitFor((e) => e.data.status === 'pending');
      assert.equal(stream.events.length, 1);
      const cancel = await apiClient(one.baseUrl, apiKey)('POST', `${V1}/cancel/${action.action_id}`);
      assert.equal(cancel.body.status, 'cancelled');
      const events = await assertWhole(stream, 'cancelled');
      assert.deepEqual(events.map((e) => e.data.status), ['pending', 'cancelled']);
    });

    it('orders one action\'s events as their transactions commit: a job\'s move waits for the action\'s open transaction', async () => {
      const { apiKey } = await newAccount(one.db, 20);
      const job = (await apiClient(one.baseUrl, apiKey)('POST', `${V2}/jobs/generate`, { images: [{ data: await jpegBase64() }] })).body;
      const stream = await openSse(`${two.baseUrl}${V2}/jobs/${job.job_id}/events`, { Authorization: `Bearer ${apiKey}` });
      await stream.waitFor((e) => e.data.status === 'queued');
      const { Client } = await import('pg');
      const { testEnvironment } = await import('../support/environment');
      const first = new Client({ connectionString: testEnvironment().databaseUrl });
      const second = new Client({ connectionString: testEnvironment().databaseUrl, application_name: 'sse-order-second' });
      await Promise.all([first.connect(), second.connect()]);
      try {
        await first.query('BEGIN');
        await first.query('UPDATE actions SET progress = 10 WHERE id = $1', [job.resource_id]); // its event is written at commit
        // The job's move starts second and its event waits for the action's row, so it is recorded after the first.
        const moving = second.query(`UPDATE jobs SET phase = 'routing' WHERE id = $1`, [job.job_id]);
        await eventually(async () => (await one.db.query(`SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'sse-order-second'`))[0]?.wait_event_type,
          (wait) => wait === 'Lock');
        await first.query('COMMIT');
        await moving;
      } finally {
        await Promise.all([first.end(), second.end()]);
      }
      const moves = await eventually(async () => stream.events.map((e) => `${e.data.phase}/${e.data.percent}`), (m) => m.length === 3);
      assert.deepEqual(moves, ['queued/null', 'queued/10', 'routing/10']);
      assert.deepEqual(stream.events.map((e) => Number(e.id)), [1, 2, 3]);
      stream.drop();
    });

    it('loses nothing when the LISTEN connection drops: it listens again and the streams catch up', async () => {
      const { apiKey } = await newAccount(one.db, 20);
      const action = (await apiClient(one.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      const stream = await openSse(`${two.baseUrl}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` });
      await stream.waitFor((e) => e.data.status === 'pending');
      const dropped = await one.db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'imagery-live-progress'`);
      assert.ok(dropped.length >= 1);
      // The cancel is written while the other process may not be listening yet: it reads the log once it is again.
      assert.equal((await apiClient(one.baseUrl, apiKey)('POST', `${V1}/cancel/${action.action_id}`)).body.status, 'cancelled');
      assert.deepEqual((await assertWhole(stream, 'cancelled')).map((e) => e.data.status), ['pending', 'cancelled']);
    });

    it('ends its streams when the process shuts down', async () => {
      const { apiKey } = await newAccount(one.db, 20);
      const action = (await apiClient(one.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      const stream = await openSse(`${two.baseUrl}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` });
      await stream.waitFor((e) => e.data.status === 'pending');
      assert.equal(two.services.liveEvents.size, 1);
      await two.services.liveEvents.close();
      await stream.ended;
      assert.equal(two.services.liveEvents.size, 0);
    });
  });

  describe('a Runway video', () => {
    let runway: RunwayServer;
    let stack: Stack;
    before(async () => {
      runway = await startRunwayServer();
      const video = new RunwayProvider({
        apiKey: runway.apiKey, baseUrl: runway.url, model: 'gen4_turbo', pollIntervalSeconds: 0.2, timeoutMs: 10_000,
        outbound: new OutboundPolicy(loadConfig().outboundAllowCidrs),
      });
      stack = await startStack({ providers: { ...allFrom(new LocalRenderer()), video } });
    });
    after(async () => {
      await stack.stop();
      await runway.close();
    });

    it('carries the percent Runway reports, in order, and 100 at the end', async () => {
      runway.nextTask({ status: 'PENDING' }, { status: 'RUNNING', progress: 0.3 }, { status: 'RUNNING', progress: 0.8 }, { status: 'SUCCEEDED' });
      const { apiKey } = await newAccount(stack.db, 50);
      const action = (await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/video`,
        { image: { data: await jpegBase64(640, 480) }, duration_sec: 5, scenario: 'A slow turn' })).body;
      const stream = await openSse(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` });
      const events = await assertWhole(stream, 'completed');
      assert.deepEqual(events.map((e) => e.data.percent).filter((p) => p !== null), [30, 80, 100]);
      assert.equal(events.at(-1)!.data.provider, 'runway');
      assert.equal((await stack.db.query('SELECT progress FROM actions WHERE id = $1', [action.action_id]))[0].progress, 80, 'the last percent Runway reported');
    });
  });

  describe('limits', () => {
    let stack: Stack;
    before(async () => { stack = await startStack({ withWorker: false, liveStreams: { perKey: 2, perProcess: 3 } }); });
    after(() => stack.stop());

    it('refuses a key past its open streams (429 too_many_streams) and the process past its own (503), and counts a closed stream out', async () => {
      const photo = { images: [{ data: await jpegBase64() }] };
      const [a, b] = await Promise.all([newAccount(stack.db, 20), newAccount(stack.db, 20)]);
      const streamOf = async (apiKey: string) => {
        const action = (await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, photo)).body; // no worker: it stays pending
        return openSse(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` });
      };
      const held = [await streamOf(a.apiKey), await streamOf(a.apiKey)];
      assert.deepEqual(held.map((s) => s.status), [200, 200]);
      const third = await streamOf(a.apiKey);
      assert.equal(third.status, 429);
      assert.equal(third.headers['retry-after'], '5');
      const refused = JSON.parse(third.text).detail;
      assert.equal(refused.error, 'too_many_streams');
      assert.deepEqual(refused.details, { limit: 2 });

      const other = await streamOf(b.apiKey); // another key: its own count, and the process's third stream
      assert.equal(other.status, 200);
      const full = await streamOf(b.apiKey);
      assert.equal(full.status, 503);
      assert.equal(JSON.parse(full.text).detail.error, 'generation_unavailable');
      assert.equal(full.headers['retry-after'], '5');
      assert.equal(stack.services.liveEvents.size, 3);

      held[0].drop();
      await eventually(async () => stack.services.liveEvents.size, (n) => n === 2);
      const again = await streamOf(a.apiKey);
      assert.equal(again.status, 200, 'the key\'s closed stream no longer counts');
      for (const s of [held[1], other, again]) s.drop();
      await eventually(async () => stack.services.liveEvents.size, (n) => n === 0);
    });
  });

  describe('a client that does not read', () => {
    let stack: Stack;
    before(async () => { stack = await startStack({ withWorker: false }); });
    after(() => stack.stop());

    it('is disconnected once 64 KiB wait unsent (past what the sockets hold), and a reader then resumes the whole log', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const auth = { Authorization: `Bearer ${apiKey}` };
      const action = (await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      // A long log (about 10 MB of events, more than the loopback sockets hold: about 4 MB), after the action's first event.
      const LONG = 60_000;
      await stack.db.query(`
        INSERT INTO action_events (action_id, seq, action_status, provider, percent)
        SELECT $1, 1 + n, 'pending', 'local', n % 100 FROM generate_series(1, $2::int) AS n`, [action.action_id, LONG]);
      await stack.db.query('ANALYZE action_events'); // as autovacuum would after so many rows: reads walk the primary key
      const { request } = await import('node:http');
      const url = new URL(`${stack.baseUrl}${V1}/status/${action.action_id}/events`);
      const stalled = request(url, { headers: auth, agent: false }, (res) => res.pause()); // never reads
      stalled.on('error', () => undefined); // the server's cut, seen only when it reads (it never does)
      stalled.end();
      try {
        await eventually(async () => stack.services.liveEvents.size, (n) => n === 1);
        await eventually(async () => stack.services.liveEvents.size, (n) => n === 0, 30_000); // the server gave up on it
      } finally {
        stalled.destroy();
      }

      const reader = await openSse(url.toString(), auth);
      await eventually(async () => reader.events.at(-1)?.id, (id) => id === String(LONG + 1), 30_000);
      assert.equal((await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/cancel/${action.action_id}`)).body.status, 'cancelled');
      const events = await assertWhole(reader, 'cancelled');
      assert.deepEqual(events.map((e) => Number(e.id)), Array.from({ length: LONG + 2 }, (_, i) => i + 1), 'every event once, in order');
    });
  });

  describe('a stream open past LIVE_STREAM_MAX_SECONDS', () => {
    let stack: Stack;
    before(async () => { stack = await startStack({ withWorker: false, liveStreams: { maxSeconds: 0.5 } }); });
    after(() => stack.stop());

    it('is ended without a final event; the client resumes with Last-Event-ID and misses nothing', async () => {
      const { apiKey } = await newAccount(stack.db, 20);
      const auth = { Authorization: `Bearer ${apiKey}` };
      const action = (await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
      const first = await openSse(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, auth);
      await first.ended;
      assert.deepEqual(first.events.map((e) => [e.id, e.event, e.data.status]), [['1', 'progress', 'pending']]);
      assert.ok(first.comments.some((c) => c.includes('reconnect with Last-Event-ID')), JSON.stringify(first.comments));
      await eventually(async () => stack.services.liveEvents.size, (n) => n === 0);

      // Cancelled while no stream was open: the resumed stream reads it from the log.
      assert.equal((await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/cancel/${action.action_id}`)).body.status, 'cancelled');
      const resumed = await openSse(`${stack.baseUrl}${V1}/status/${action.action_id}/events`, { ...auth, 'Last-Event-ID': '1' });
      assert.equal(resumed.status, 200);
      assert.deepEqual((await assertWhole(resumed, 'cancelled')).map((e) => [e.id, e.data.status]), [['2', 'cancelled']]);
    });
  });

  describe('a real API process', () => {
    it('on SIGTERM ends its open streams and exits', async () => {
      const { startServiceProcess } = await import('../../ops/cluster/service-process');
      const { testEnvironment } = await import('../support/environment');
      const { freePort } = await import('../../ops/dev-server');
      const os = await import('node:os');
      const path = await import('node:path');
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const api = await startServiceProcess('api', {
        DATABASE_URL: testEnvironment().databaseUrl, TEMPORAL_ADDRESS: testEnvironment().temporalAddress, TEMPORAL_TASK_QUEUE: `sse-shutdown-${process.pid}`,
        PORT: String(port), PUBLIC_BASE_URL: url, DATA_DIR: path.join(os.tmpdir(), `imagery-sse-api-${process.pid}`),
        ASSETS_DIR: path.join(os.tmpdir(), 'imagery-test-assets'), RECONCILE_GRACE_SECONDS: '86400',
      });
      try {
        const stack = await startStack({ withWorker: false });
        try {
          const { apiKey } = await newAccount(stack.db, 20);
          const action = (await apiClient(stack.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }] })).body;
          const streams = await Promise.all([1, 2, 3].map(() => openSse(`${url}${V1}/status/${action.action_id}/events`, { Authorization: `Bearer ${apiKey}` })));
          await Promise.all(streams.map((s) => s.waitFor((e) => e.data.status === 'pending')));
          const started = Date.now();
          api.child.kill('SIGTERM');
          await Promise.all(streams.map((s) => s.ended));
          assert.equal(await api.exited, 0);
          assert.ok(Date.now() - started < 10_000, `exited in ${Date.now() - started} ms`);
        } finally {
          await stack.stop();
        }
      } finally {
        await api.stop(1_000);
      }
    });
  });
});
