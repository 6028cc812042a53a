import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServiceProcess, ServiceProcess } from '../../ops/cluster/service-process';
import { freePorts } from '../../ops/dev-server';
import { loadConfig } from '../../src/config';
import { registerDatabaseGauges } from '../../src/metrics/database-gauges';
import { registry } from '../../src/metrics/registry';
import { MetricsServer, startMetricsServer } from '../../src/metrics/server';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { testEnvironment } from '../support/environment';
import { apiClient, eventually, jpegBase64, newAccount, V1, withEnv } from '../support/fixtures';
import { familiesOf, parseMetrics, Sample, scrape, valueOf } from '../support/prometheus';
import { ProviderError } from '../../src/providers/provider';
import { ScriptedProvider } from '../support/providers';
import { Stack, startStack } from '../support/stack';
import { parse as parseYaml } from 'yaml';

const V2 = '/api/v2';
const REPO = path.resolve(__dirname, '../../..');

/** What moved between two scrapes, for the samples named `name` whose labels include `labels`. */
const delta = (before: Sample[], after: Sample[], name: string, labels: Record<string, string> = {}) =>
  valueOf(after, name, labels) - valueOf(before, name, labels);

/**
 * The real API (this process, its /metrics on a loopback port) and a real worker process (`main.js worker` with
 * METRICS_PORT, its own /metrics with the Temporal SDK's metrics merged): a photo job runs from one to the other.
 */
describe('metrics of the API and of a worker process', function () {
  this.timeout(180_000);
  let stack: Stack;
  let apiMetrics: MetricsServer;
  let worker: ServiceProcess;
  let workerMetricsUrl: string;
  let image: string;

  before(async () => {
    image = await jpegBase64();
    stack = await startStack({ withWorker: false });
    registerDatabaseGauges(stack.db);
    apiMetrics = await startMetricsServer({ host: '127.0.0.1', port: 0 });
    const env = testEnvironment();
    const [metricsPort, sdkMetricsPort] = await freePorts(2);
    worker = await startServiceProcess('worker', {
      DATABASE_URL: env.databaseUrl, TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_TASK_QUEUE: stack.taskQueue,
      ASSETS_DIR: path.join(os.tmpdir(), 'imagery-test-assets'), DATA_DIR: path.join(os.tmpdir(), `imagery-metrics-${process.pid}`),
      LOCAL_RENDERER_DELAY_MS: '50', METRICS_PORT: String(metricsPort), TEMPORAL_METRICS_PORT: String(sdkMetricsPort),
    });
    workerMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  });
  after(async () => {
    await worker?.stop();
    await apiMetrics?.close();
    await stack?.stop();
  });

  it('move as a photo job runs: accepted and succeeded once, sparks held then charged, the provider call timed, requests by route template', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const [apiBefore, workerBefore] = [(await scrape(apiMetrics.url)).samples, (await scrape(workerMetricsUrl)).samples];

    const key = { 'Idempotency-Key': `metrics-${Date.now()}` };
    const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }] }, key)).body;
    const replay = await call('POST', `${V2}/jobs/generate`, { images: [{ data: image }] }, key);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'succeeded');
    assert.equal((await call('GET', job.status_url)).body.charged, 5);

    const api = (await scrape(apiMetrics.url)).samples;
    const accepted = { product: 'photo', provider: 'local', outcome: 'accepted' };
    assert.equal(delta(apiBefore, api, 'imagery_actions_total', accepted), 1, 'accepted once, the replay not counted');
    assert.equal(delta(apiBefore, api, 'imagery_jobs_total', { type: 'generation.execute', outcome: 'accepted' }), 1);
    assert.equal(delta(apiBefore, api, 'imagery_sparks_held_total', { product: 'photo' }), 5);
    assert.equal(delta(apiBefore, api, 'imagery_idempotent_replays_total', { route: '/api/v2/jobs/generate' }), 1);
    const created = { method: 'POST', route: '/api/v2/jobs/generate', status: '202' };
    assert.equal(delta(apiBefore, api, 'imagery_http_request_duration_seconds_count', created), 2);
    assert.equal(delta(apiBefore, api, 'imagery_http_request_duration_seconds_count', { method: 'GET', route: '/api/v2/jobs/:job_id', status: '200' }), 1);
    assert.ok(!api.some((s) => Object.values(s.labels).some((v) => v.includes(job.job_id))), 'no raw id in any label');

    // The worker counts what it committed: completed and charged once each, one provider call.
    const workerAfter = await eventually(async () => (await scrape(workerMetricsUrl)).samples,
      (s) => delta(workerBefore, s, 'imagery_jobs_total', { outcome: 'succeeded' }) === 1);
    assert.equal(delta(workerBefore, workerAfter, 'imagery_actions_total', { product: 'photo', provider: 'local', outcome: 'completed' }), 1);
    assert.equal(delta(workerBefore, workerAfter, 'imagery_sparks_charged_total', { product: 'photo' }), 5);
    assert.equal(delta(workerBefore, workerAfter, 'imagery_provider_call_duration_seconds_count',
      { provider: 'local', operation: 'render_photo', outcome: 'ok', failure_class: 'none' }), 1);
    // The Temporal SDK's own worker metrics, merged into the same scrape.
    assert.ok(workerAfter.some((s) => s.name.startsWith('temporal_worker_task_slots_available')), 'task slots');
    assert.ok(workerAfter.some((s) => s.name.startsWith('temporal_workflow_task_schedule_to_start_latency')), 'schedule-to-start latency');
    assert.ok(workerAfter.some((s) => s.name.startsWith('temporal_sticky_cache_size')), 'sticky cache');
  });

  it('counts a cancel as released and cancelled, and shows the open action and hold until then', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    // No worker polls this queue: the action stays pending.
    const other = await startStack({ withWorker: false, taskQueue: `metrics-idle-${Date.now()}` });
    try {
      const before = (await scrape(apiMetrics.url)).samples;
      const created = (await apiClient(other.baseUrl, apiKey)('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
      registerDatabaseGauges(stack.db); // a fresh read (the gauges are cached for 10 s)
      const oldestHoldAge = async () => (await stack.db.query(
        `SELECT extract(epoch FROM now() - min(created_at))::float AS age FROM spark_holds WHERE status = 'held'`))[0].age as number;
      const oldestBefore = await oldestHoldAge();
      const open = (await scrape(apiMetrics.url)).samples;
      const oldestAfter = await oldestHoldAge();
      assert.ok(valueOf(open, 'imagery_open_actions', { status: 'pending' }) >= 1);
      assert.ok(valueOf(open, 'imagery_open_holds') >= 1);
      assert.ok(valueOf(open, 'imagery_open_holds_sparks') >= 5);
      // The gauge is the age of the oldest open hold in the database (shared with other suites), read between the two
      // reads around the scrape (the oldest may settle meanwhile; then the gauge lies between their answers).
      const gauge = valueOf(open, 'imagery_oldest_open_hold_age_seconds');
      assert.ok(open.some((s) => s.name === 'imagery_oldest_open_hold_age_seconds'), 'the gauge is exported');
      assert.ok(gauge >= Math.min(oldestBefore, oldestAfter) - 1 && gauge <= Math.max(oldestBefore, oldestAfter) + 1, `${gauge} vs ${oldestBefore}..${oldestAfter}`);
      assert.equal(valueOf(open, 'imagery_open_holds_over_an_hour'), 0);
      const queue = valueOf(open, 'imagery_postgres_notify_queue_usage_ratio');
      assert.ok(queue >= 0 && queue < 0.01, `the NOTIFY queue is read, and empty while every listener reads (${queue})`);

      assert.equal((await call('POST', `${V1}/cancel/${created.action_id}`)).body.status, 'cancelled');
      const after = (await scrape(apiMetrics.url)).samples;
      assert.equal(delta(before, after, 'imagery_actions_total', { product: 'photo', outcome: 'cancelled' }), 1);
      assert.equal(delta(before, after, 'imagery_sparks_released_total', { product: 'photo' }), 5);
      assert.equal((await call('POST', `${V1}/cancel/${created.action_id}`)).body.status, 'cancelled');
      assert.equal(delta(before, (await scrape(apiMetrics.url)).samples, 'imagery_sparks_released_total', { product: 'photo' }), 5, 'a repeated cancel counts nothing');
    } finally {
      await other.stop();
    }
  });

  it('counts rate-limit refusals under the group\'s prefix, never the raw path', async () => {
    const limited = await startStack({ withWorker: false, rateLimitPerMinute: 1 });
    try {
      const call = apiClient(limited.baseUrl, (await newAccount(limited.db, 20)).apiKey);
      const before = (await scrape(apiMetrics.url)).samples;
      assert.equal((await call('GET', `${V1}/balance`)).status, 200);
      assert.equal((await call('GET', `${V1}/status/123456`)).status, 429);
      const after = (await scrape(apiMetrics.url)).samples;
      assert.equal(delta(before, after, 'imagery_rate_limit_refusals_total'), 1);
      assert.equal(delta(before, after, 'imagery_http_request_duration_seconds_count', { route: '/api/v1/public/*', status: '429' }), 1);
    } finally {
      await limited.stop();
    }
  });

  it('the Grafana dashboard parses, and every metric it queries is in a scrape of the API or the worker', async () => {
    const dashboard = JSON.parse(readFileSync(path.join(REPO, 'deploy/grafana/dashboard.json'), 'utf8'));
    const exprs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if ((k === 'expr' || k === 'query') && typeof v === 'string') exprs.push(v);
          else walk(v);
        }
      }
    };
    walk(dashboard);
    assert.ok(exprs.length >= 10, `${exprs.length} queries`);
    const referenced = new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:imagery|temporal)_[a-z0-9_]+)/g)].map((m) => m[1])));
    // A photo and a video through the worker first, so that the SDK's histograms and sticky cache have samples (the
    // test stands alone): the photo renders within its one workflow task, the video's steps are activities on the
    // provider's queue with workflow tasks between them.
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const photo = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
    const video = (await call('POST', `${V1}/generate/video`, { image: { data: image }, duration_sec: 5 })).body;
    for (const { action_id: id } of [photo, video]) await stack.temporal.workflow.getHandle(actionWorkflowId(id)).result();
    const worker = await eventually(() => scrape(workerMetricsUrl), (m) => m.samples.some((s) => s.name === 'temporal_sticky_cache_size'));
    const api = await scrape(apiMetrics.url);
    const known = new Set([...familiesOf(api.text), ...familiesOf(worker.text), ...api.samples.map((s) => s.name), ...worker.samples.map((s) => s.name)]);
    const missing = [...referenced].filter((name) => !known.has(name) && !known.has(name.replace(/_(bucket|sum|count)$/, '')));
    assert.deepEqual(missing, []);

    // Every label a panel groups by is one its metrics carry: in a sample, or declared on our registry's metric
    // (a counter nothing has moved yet shows no sample). `instance` and `job` are Prometheus's own.
    const samples = [...api.samples, ...worker.samples];
    const labelsOf = (metric: string) => new Set([
      ...samples.filter((s) => s.name === metric || s.name.replace(/_(bucket|sum|count)$/, '') === metric.replace(/_(bucket|sum|count)$/, ''))
        .flatMap((s) => Object.keys(s.labels)),
      ...(((registry.getSingleMetric(metric.replace(/_(bucket|sum|count)$/, '')) as unknown as { labelNames?: string[] })?.labelNames) ?? []),
      'instance', 'job',
    ]);
    for (const expr of exprs) {
      const metrics = [...expr.matchAll(/\b((?:imagery|temporal)_[a-z0-9_]+)/g)].map((m) => m[1]);
      for (const [, list] of expr.matchAll(/by \(([^)]*)\)/g)) {
        for (const label of list.split(',').map((l) => l.trim()).filter((l) => l !== 'le')) {
          assert.ok(metrics.some((m) => labelsOf(m).has(label)), `${label} in ${expr}`);
        }
      }
    }

    const alerts = parseYaml(readFileSync(path.join(REPO, 'deploy/prometheus/alerts.yml'), 'utf8'));
    const rules = alerts.groups.flatMap((g: { rules: unknown[] }) => g.rules) as { alert: string; expr: string; labels: { severity: string }; annotations: { summary: string } }[];
    for (const rule of rules) assert.ok(rule.alert && rule.expr && rule.labels.severity && rule.annotations.summary, JSON.stringify(rule));
    for (const wanted of ['ImageryActionsStuckProcessing', 'ImageryProviderFailureRate', 'ImageryWebhookDeliveriesExhausted', 'ImagerySparkHoldsOpenTooLong', 'ImageryNotifyQueueFilling']) {
      assert.ok(rules.some((r) => r.alert === wanted), wanted);
    }
    const alerted = new Set(rules.flatMap((r) => [...r.expr.matchAll(/\b((?:imagery|temporal)_[a-z0-9_]+)/g)].map((m) => m[1])));
    assert.deepEqual([...alerted].filter((name) => !known.has(name) && !known.has(name.replace(/_(bucket|sum|count)$/, ''))), []);
  });
});

describe('metrics of npm start (API and worker in one process)', function () {
  this.timeout(180_000);

  it('serves one registry on METRICS_PORT: the API\'s, the worker\'s, the read-model gauges and the SDK\'s, never on PORT', async () => {
    const env = testEnvironment();
    const [port, metricsPort, sdkPort] = await freePorts(3);
    const service = await startServiceProcess('all', {
      DATABASE_URL: env.databaseUrl, TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_TASK_QUEUE: `metrics-all-${Date.now()}`,
      PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, ASSETS_DIR: path.join(os.tmpdir(), 'imagery-test-assets'),
      DATA_DIR: path.join(os.tmpdir(), `imagery-metrics-all-${process.pid}`), METRICS_PORT: String(metricsPort), TEMPORAL_METRICS_PORT: String(sdkPort),
    });
    try {
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 404, 'not on the API port');
      const { text, samples } = await eventually(() => scrape(`http://127.0.0.1:${metricsPort}/metrics`),
        (m) => m.samples.some((s) => s.name === 'temporal_worker_task_slots_available'));
      assert.equal(valueOf(samples, 'imagery_http_request_duration_seconds_count', { route: '/healthz', status: '200' }), 1);
      assert.ok(samples.some((s) => s.name === 'imagery_open_holds'), 'the read-model gauges of the API part');
      assert.equal(text.match(/^# TYPE imagery_actions_total /gm)?.length, 1, 'one registry: each family once');
    } finally {
      await service.stop();
    }
  });
});

describe('metrics of a provider failure and a retry', function () {
  this.timeout(90_000);

  it('times the failed call with its failure class, and counts the job succeeded and charged once after its retry', async () => {
    const stack = await startStack({ provider: new ScriptedProvider([new ProviderError('upstream 503', 'unavailable', true)]), jobRetryBackoffMs: 200 });
    try {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
      const before = parseMetrics(await registry.metrics());
      const job = (await call('POST', `${V2}/jobs/generate`, { images: [{ data: await jpegBase64() }] })).body;
      assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'succeeded');
      const after = parseMetrics(await registry.metrics());
      const calls = { provider: 'scripted', operation: 'render_photo' };
      assert.equal(delta(before, after, 'imagery_provider_call_duration_seconds_count', { ...calls, outcome: 'error', failure_class: 'unavailable' }), 1);
      assert.equal(delta(before, after, 'imagery_provider_call_duration_seconds_count', { ...calls, outcome: 'ok', failure_class: 'none' }), 1);
      assert.equal(delta(before, after, 'imagery_jobs_total', { type: 'generation.execute', outcome: 'succeeded' }), 1);
      assert.equal(delta(before, after, 'imagery_actions_total', { product: 'photo', provider: 'scripted', outcome: 'completed' }), 1);
      assert.equal(delta(before, after, 'imagery_sparks_charged_total', { product: 'photo' }), 5);
      assert.equal(delta(before, after, 'imagery_sparks_released_total', { product: 'photo' }), 0);
    } finally {
      await stack.stop();
    }
  });
});

describe('effects after commit', () => {
  it('run once when the transaction commits, never when it rolls back', async () => {
    const { openDatabase } = await import('../../src/db/data-source');
    const { afterCommit } = await import('../../src/db/after-commit');
    const db = await openDatabase(testEnvironment().databaseUrl, { migrate: false, poolSize: 2 });
    try {
      const ran: string[] = [];
      await db.transaction(async (m) => {
        afterCommit(m, () => ran.push('committed'));
        assert.deepEqual(ran, [], 'not before the commit');
      });
      await assert.rejects(db.transaction(async (m) => {
        afterCommit(m, () => ran.push('rolled back'));
        throw new Error('undo');
      }), /undo/);
      afterCommit(db.manager, () => ran.push('no transaction'));
      assert.deepEqual(ran, ['committed', 'no transaction']);
    } finally {
      await db.destroy();
    }
  });
});

describe('where /metrics is served', () => {
  const UNSET = { METRICS_PORT: '', METRICS_HOST: '', TEMPORAL_METRICS_PORT: '', PORT: '' };
  const configWith = (env: Record<string, string>) => withEnv({ ...UNSET, ...env }, () => loadConfig());

  it('only on its own port, loopback by default, and only when METRICS_PORT is set', () => {
    assert.equal(configWith({}).metricsPort, undefined);
    const on = configWith({ METRICS_PORT: '9464' });
    assert.deepEqual([on.metricsPort, on.metricsHost, on.temporalMetricsPort], [9464, '127.0.0.1', 9465]);
    const wide = configWith({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', TEMPORAL_METRICS_PORT: '9500' });
    assert.deepEqual([wide.metricsHost, wide.temporalMetricsPort], ['0.0.0.0', 9500]);
    assert.throws(() => configWith({ METRICS_PORT: '3000' }), /never served on the API's port/);
    assert.throws(() => configWith({ METRICS_PORT: '70000' }), /METRICS_PORT must be a port/);
    assert.throws(() => configWith({ METRICS_PORT: '9464', TEMPORAL_METRICS_PORT: '9464' }), /must differ from METRICS_PORT/);
    assert.throws(() => configWith({ METRICS_PORT: '9464', METRICS_HOST: 'a b' }), /METRICS_HOST/);
  });

  it('the API port does not answer /metrics; the metrics listener answers GET /metrics and nothing else', async function () {
    this.timeout(30_000);
    const stack = await startStack({ withWorker: false });
    const metrics = await startMetricsServer({ host: '127.0.0.1', port: 0 });
    try {
      const onApi = await fetch(`${stack.baseUrl}/metrics`);
      assert.equal(onApi.status, 404);
      assert.ok(!(await onApi.text()).includes('imagery_'));
      assert.match(metrics.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const scraped = await fetch(metrics.url);
      assert.equal(scraped.status, 200);
      assert.match(scraped.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.match(await scraped.text(), /# TYPE imagery_actions_total counter/);
      assert.equal((await fetch(metrics.url.replace('/metrics', '/other'))).status, 404);
      assert.equal((await fetch(metrics.url, { method: 'POST' })).status, 404);
    } finally {
      await metrics.close();
      await stack.stop();
    }
  });
});
