/**
 * `npm run test:cluster`: the production topology, for real: the Temporal server on Postgres, the S3 gateway as
 * object storage, two API processes and two worker processes, each its own OS process. What one process does, the
 * others see; killing one loses nothing and charges nothing twice.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { Cluster, portsAreFree, startCluster, temporalServerPorts } from '../../ops/cluster/cluster';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/data-source';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { dropTemporalDatabases, resetDatabase } from '../support/environment';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { type Sample, scrape, valueOf } from '../support/prometheus';

const V2 = '/api/v2';
const APP_DATABASE_URL = process.env.TEST_CLUSTER_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/imagery_cluster_test';
// Over TLS, as a production database is reached (`require`: the local server's certificate is self-signed;
// `uselibpqcompat` gives node-postgres libpq's meaning of it).
const TEMPORAL_DATABASE_URL = process.env.TEST_CLUSTER_TEMPORAL_DATABASE_URL
  ?? 'postgres://postgres@127.0.0.1:5432/temporal_cluster_test?sslmode=require&uselibpqcompat=true';
const RATE_LIMIT = 40;

/** A frontend port whose whole Temporal layout, and `count` API ports, are free. */
async function freeLayout(apis: number, processes: number): Promise<{ temporalPort: number; apiPort: number; s3Port: number; metricsPort: number }> {
  for (;;) {
    // Below 32768: the server stores its membership ports (base - 300 and up) as a Postgres smallint.
    const temporalPort = 10_000 + Math.floor(Math.random() * 20_000);
    const apiPort = temporalPort + 20;
    const s3Port = temporalPort + 40;
    const metricsPort = temporalPort + 60; // two per process: its /metrics and its SDK exporter
    const ports = [...temporalServerPorts(temporalPort), ...Array.from({ length: apis }, (_, i) => apiPort + i), s3Port,
      ...Array.from({ length: 2 * processes }, (_, i) => metricsPort + i)];
    if (await portsAreFree(ports)) return { temporalPort, apiPort, s3Port, metricsPort };
  }
}

describe('the production topology: Temporal server on Postgres, S3 storage, 2 API and 2 worker processes', function () {
  let cluster: Cluster;
  let db: DataSource;
  let temporal: TemporalClient;
  let image: string;

  before(async function () {
    this.timeout(600_000); // a cold machine builds the Temporal server and the S3 gateway first
    await Promise.all([resetDatabase(APP_DATABASE_URL), dropTemporalDatabases(TEMPORAL_DATABASE_URL)]);
    const layout = await freeLayout(2, 2 + 2 + 2); // a worker is started again after one is killed
    cluster = await startCluster({
      apis: 2,
      workers: 2,
      ...layout,
      uiPort: undefined,
      databaseUrl: APP_DATABASE_URL,
      temporalDatabaseUrl: TEMPORAL_DATABASE_URL,
      storage: 's3',
      namespace: 'default',
      taskQueue: 'imagery-cluster-test',
      dataDir: mkdtempSync(path.join(os.tmpdir(), 'imagery-cluster-')),
      toolsDir: loadConfig().toolsDir,
      // Renders take long enough for a worker to be killed in the middle of one.
      env: { LOCAL_RENDERER_DELAY_MS: '1500', RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT), LOG_LEVEL: 'info' },
    });
    db = await openDatabase(APP_DATABASE_URL, { migrate: false, poolSize: 2 });
    temporal = new TemporalClient({ connection: await Connection.connect({ address: cluster.temporalAddress }), namespace: 'default' });
    image = await jpegBase64(400, 500, '#3a8f5c');
  });

  after(async function () {
    this.timeout(60_000);
    await temporal?.connection.close();
    await db?.destroy();
    await cluster?.stop();
  });

  const api = (i: number, apiKey: string) => apiClient(cluster.apis[i].url!, apiKey);
  const actionDone = (actionId: number) => temporal.workflow.getHandle(actionWorkflowId(actionId)).result();

  async function chargesOf(actionId: number): Promise<number> {
    const [row] = await db.query(`SELECT count(*)::int AS n FROM spark_ledger WHERE action_id = $1 AND kind = 'charge'`, [actionId]);
    return row.n;
  }

  it('runs on the Temporal server (its database over TLS), not the dev server, and stores assets in the S3 gateway', async () => {
    const info = await temporal.connection.workflowService.getSystemInfo({});
    assert.ok(info.serverVersion?.startsWith('1.29.1'), `server version ${info.serverVersion}`);
    const connections = await db.query(
      `SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.datname = $1`,
      [decodeURIComponent(new URL(TEMPORAL_DATABASE_URL).pathname.slice(1))]);
    assert.ok(connections.length > 0 && connections.every((c: { ssl: boolean }) => c.ssl), 'the server reaches Postgres over TLS');
    assert.equal(cluster.env.ASSET_STORE, 's3');
    assert.equal(cluster.env.S3_ENDPOINT, cluster.s3Endpoint);
  });

  it('completes photos, a video and a v2 job through both APIs, and either API serves every result', async () => {
    const { accountId, apiKey } = await newAccount(db, 100);
    const [first, second] = [api(0, apiKey), api(1, apiKey)];
    const photo1 = await first('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup' });
    const photo2 = await second('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup' });
    const video = await second('POST', `${V1}/generate/video`, { image: { data: image }, scenario: 'slow turn' });
    const job = await first('POST', `${V2}/jobs/generate`, { images: [{ data: image }], product_name: 'Vase', category_id: 'home', resolution: '1K' });
    for (const res of [photo1, photo2, video]) assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(job.status, 202, JSON.stringify(job.body));

    await Promise.all([photo1, photo2, video].map((res) => actionDone(res.body.action_id)));
    assert.equal((await temporal.workflow.getHandle(jobWorkflowId(job.body.job_id)).result()).status, 'succeeded');

    // Each result through the API that did not take the request: 302 to a short-lived presigned S3 URL.
    for (const [res, reader] of [[photo1, second], [photo2, first], [video, first]] as const) {
      const status = await reader('GET', `${V1}/status/${res.body.action_id}`);
      assert.equal(status.body.status, 'completed');
      const redirect = await fetch(status.body.result_url, { redirect: 'manual' });
      assert.equal(redirect.status, 302);
      const location = new URL(redirect.headers.get('location')!);
      assert.equal(location.origin, new URL(cluster.s3Endpoint!).origin, 'redirected to the object store');
      assert.ok(location.searchParams.get('X-Amz-Signature'), 'a presigned URL');
      const download = await fetch(status.body.result_url);
      assert.equal(download.status, 200);
      assert.match(download.headers.get('content-type') ?? '', res === video ? /^video\/mp4/ : /^image\/jpeg/);
    }
    // A player's range request for the video, through the redirect.
    const videoUrl = (await second('GET', `${V1}/status/${video.body.action_id}`)).body.result_url;
    const range = await fetch(videoUrl, { headers: { Range: 'bytes=0-99' } });
    assert.equal(range.status, 206);
    assert.equal((await range.arrayBuffer()).byteLength, 100);

    const jobResult = await second('GET', `${V2}/jobs/${job.body.job_id}`);
    assert.equal(jobResult.body.status, 'succeeded');
    const { balance, held } = await assertMoneyConsistent(db, accountId);
    assert.equal(held, 0);
    assert.equal(balance, 100 - 5 - 5 - 10 - 5);
  });

  it('serves GET /metrics on every API and worker process, each its own, and their counts move as a job runs', async () => {
    const processes = [...cluster.apis, ...cluster.workers];
    const urls = processes.map((p) => p.metricsUrl!);
    assert.equal(new Set(urls).size, 4, `four listeners: ${urls.join(', ')}`);
    const all = async () => Promise.all(urls.map(async (url) => (await scrape(url)).samples));
    const sum = (scrapes: Sample[][], which: number[], name: string, labels: Record<string, string>) =>
      which.reduce((total, i) => total + valueOf(scrapes[i], name, labels), 0);
    const before = await all();
    for (const i of [2, 3]) assert.ok(before[i].some((s) => s.name.startsWith('temporal_')), `${processes[i].name}: the SDK's worker metrics`);
    const { apiKey } = await newAccount(db, 20);
    const photo = await api(1, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Cup' });
    assert.equal(photo.status, 200, JSON.stringify(photo.body));
    await actionDone(photo.body.action_id);
    const after = await all();
    const accepted = { product: 'photo', outcome: 'accepted' };
    assert.equal(valueOf(after[1], 'imagery_actions_total', accepted) - valueOf(before[1], 'imagery_actions_total', accepted), 1, 'the API that took it');
    assert.equal(valueOf(after[0], 'imagery_actions_total', accepted), valueOf(before[0], 'imagery_actions_total', accepted), 'not the other');
    const completed = { product: 'photo', outcome: 'completed' };
    assert.equal(sum(after, [2, 3], 'imagery_actions_total', completed) - sum(before, [2, 3], 'imagery_actions_total', completed), 1, 'a worker completed it');
    const charged = { product: 'photo' };
    assert.equal(sum(after, [2, 3], 'imagery_sparks_charged_total', charged) - sum(before, [2, 3], 'imagery_sparks_charged_total', charged), 5);
  });

  it('holds one rate limit across both APIs', async () => {
    // The limit is a fixed window per minute: a burst that straddles a window's end is tried again in the next.
    for (let attempt = 1; ; attempt += 1) {
      const { apiKey } = await newAccount(db, 10);
      const minute = Math.floor(Date.now() / 60_000);
      const answers = await Promise.all(Array.from({ length: RATE_LIMIT + 10 }, (_, i) => api(i % 2, apiKey)('GET', `${V1}/balance`)));
      if (Math.floor(Date.now() / 60_000) !== minute && attempt < 3) continue;
      const counts = { ok: answers.filter((a) => a.status === 200).length, limited: answers.filter((a) => a.status === 429).length };
      assert.deepEqual(counts, { ok: RATE_LIMIT, limited: 10 });
      assert.ok(answers.filter((a) => a.status === 429).every((a) => a.body.detail.error === 'rate_limit_exceeded'));
      return;
    }
  });

  it('makes one action of one Idempotency-Key sent to both APIs at once, held and charged once', async () => {
    const { accountId, apiKey } = await newAccount(db, 20);
    const headers = { 'Idempotency-Key': `cluster-${Date.now()}` };
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => api(i % 2, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Lamp' }, headers)));
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const ids = new Set(answers.map((a) => a.body.action_id));
    assert.equal(ids.size, 1, 'one action');
    const [actionId] = ids;
    await actionDone(actionId);
    const [{ n: actions }] = await db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
    const [{ n: holds }] = await db.query('SELECT count(*)::int AS n FROM spark_holds WHERE account_id = $1', [accountId]);
    assert.deepEqual([actions, holds, await chargesOf(actionId)], [1, 1, 1]);
    assert.deepEqual(await assertMoneyConsistent(db, accountId), { balance: 15, held: 0 });
  });

  it('finishes every job when a worker is killed with SIGKILL mid-render, each charged once', async () => {
    const { accountId, apiKey } = await newAccount(db, 40);
    const created = await Promise.all(Array.from({ length: 6 }, (_, i) => api(i % 2, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Bowl' })));
    const actionIds = created.map((res) => { assert.equal(res.status, 200, JSON.stringify(res.body)); return res.body.action_id as number; });

    // The worker running a render right now: the local renderer's images render within the workflow task (a local
    // activity), so it is the worker that took the task of an action already processing and has not completed it;
    // a render the renderer had no room for runs on its queue, an activity the server sees in flight.
    const pids = new Map(cluster.workers.map((w) => [String(w.process.child.pid), w]));
    const victim = await eventually(async () => {
      for (const actionId of actionIds) {
        const [{ status }] = await db.query('SELECT status FROM actions WHERE id = $1', [actionId]);
        if (status !== 'processing') continue;
        const handle = temporal.workflow.getHandle(actionWorkflowId(actionId));
        const events = (await handle.fetchHistory()).events!;
        const rendering = (await handle.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'generateAsset');
        const identity = events.at(-1)?.workflowTaskStartedEventAttributes?.identity ?? rendering?.lastWorkerIdentity ?? '';
        const worker = pids.get(identity.split('@')[0]);
        if (worker) return worker;
      }
      return undefined;
    }, (found) => found !== undefined, 30_000);
    await victim!.process.kill('SIGKILL');

    const results = await Promise.all(actionIds.map(actionDone));
    assert.ok(results.every((r) => r.status === 'completed'), JSON.stringify(results));
    for (const actionId of actionIds) {
      assert.equal(await chargesOf(actionId), 1, `action ${actionId} charged once`);
      const [action] = await db.query('SELECT asset_path FROM actions WHERE id = $1', [actionId]);
      assert.ok(action.asset_path, 'a stored result');
    }
    assert.deepEqual(await assertMoneyConsistent(db, accountId), { balance: 40 - 6 * 5, held: 0 });
    await cluster.startWorker(); // back to two for what follows
  });

  it('keeps answering on the other API when one is killed', async () => {
    const { accountId, apiKey } = await newAccount(db, 20);
    await cluster.apis[0].process.kill('SIGKILL');
    const survivor = api(1, apiKey);
    const created = await survivor('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Jar' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await actionDone(created.body.action_id);
    assert.equal((await survivor('GET', `${V1}/status/${created.body.action_id}`)).body.status, 'completed');
    assert.equal((await survivor('GET', '/readyz')).status, 200);
    assert.deepEqual(await assertMoneyConsistent(db, accountId), { balance: 15, held: 0 });
  });
});
