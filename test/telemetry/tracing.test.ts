/**
 * Tracing: one trace from the API request to the webhook delivery (an in-memory exporter, the real stack), the
 * request id on the trace and on the action's log lines; and nothing installed when tracing is off.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { logLevel, setLogLevel } from '../../src/log';
import { actionWorkflowId, deliveryWorkflowId } from '../../src/temporal/contract';
import { TRACING_WORKFLOW_MODULES } from '../../app/worker';
import { tracingOn } from '../../src/telemetry/spans';
import { installTracing, tracing } from '../../src/telemetry/tracing';
import { GeminiProvider } from '../../src/providers/gemini';
import { quietLogger } from '../support/environment';
import { httpError, jsonAnswer, startGeminiServer } from '../support/gemini-server';
import { apiClient, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { startHttpsServer, type TestHttpsServer } from '../support/https-server';
import { ScriptedProvider } from '../support/providers';
import { type Stack, startStack } from '../support/stack';

const HISTORIES = path.resolve(__dirname, '../../../test/histories');

/** The JSON lines written to stderr while `work` runs (kept from the test's output; other writes go through). */
async function capturingLogs<T>(work: () => Promise<T>): Promise<{ result: T; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = String(chunk);
    if (!text.startsWith('{')) return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
    for (const line of text.split('\n')) if (line) lines.push(JSON.parse(line));
    return true;
  }) as typeof process.stderr.write;
  try {
    return { result: await work(), lines };
  } finally {
    process.stderr.write = original;
  }
}

describe('tracing', function () {
  this.timeout(120_000);

  describe('off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
    it('installs nothing: no provider, no context manager, no interceptors; requests and log lines carry no trace', async () => {
      assert.equal(tracing(), undefined);
      assert.equal(tracingOn(), false);
      const stack = await startStack({ withWorker: false });
      try {
        assert.deepEqual(stack.temporal.options.interceptors.workflow, [], 'no client interceptor');
        // The global API is its no-op: a span started is not recording and nothing becomes active.
        const span = trace.getTracer('probe').startSpan('probe');
        assert.equal(span.isRecording(), false);
        context.with(trace.setSpan(context.active(), span), () => assert.equal(trace.getSpan(context.active()), undefined));
        const res = await apiClient(stack.baseUrl)('GET', '/healthz');
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('traceparent'), null);
      } finally {
        await stack.stop();
      }
    });

    it('loads neither the SDK, the exporter nor Temporal\'s interceptors in the modules of the API and the worker', () => {
      // A fresh process: this test's own file loads the SDK to test it with tracing on.
      const root = path.resolve(__dirname, '../..');
      const loaded = execFileSync(process.execPath, ['-e', `
        for (const m of ['api/app', 'app/worker', 'src/temporal/client', 'src/net/outbound', 'src/providers', 'src/log']) require('./' + m);
        process.stdout.write(JSON.stringify(Object.keys(require.cache).filter((k) => /sdk-trace|interceptors-opentelemetry|exporter-trace|context-async-hooks/.test(k))));
      `], { cwd: root, encoding: 'utf8' });
      assert.deepEqual(JSON.parse(loaded), []);
    });
  });

  describe('on', () => {
    let exporter: InMemorySpanExporter;
    let bundle: WorkflowBundleWithSourceMap;
    let stack: Stack;
    let receiver: TestHttpsServer;
    let level: ReturnType<typeof logLevel>;

    before(async () => {
      exporter = new InMemorySpanExporter();
      installTracing({ serviceName: 'imagery-test', exporter, spanProcessor: (e) => new SimpleSpanProcessor(e!) });
      bundle = await bundleWorkflowCode({
        workflowsPath: require.resolve('../../workflows'), workflowInterceptorModules: TRACING_WORKFLOW_MODULES, logger: quietLogger,
      });
      stack = await startStack({ workflowBundle: bundle, webhookRetryInitialMs: 100 });
      let first = true;
      receiver = await startHttpsServer((_req, res) => {
        // One refusal first: the delivery's activity logs it, and its retry is a second activity span.
        res.writeHead(first ? 503 : 200).end('ok');
        first = false;
      });
      level = logLevel();
    });
    after(async () => {
      setLogLevel(level);
      await receiver?.close();
      await stack?.stop();
      await tracing()?.shutdown();
    });

    it('one trace spans the API request, the workflow start, the workflow, its activities and the webhook delivery', async () => {
      const { apiKey } = await newAccount(stack.db, 100);
      const call = apiClient(stack.baseUrl, apiKey);
      const requestId = `trace-test-${randomUUID()}`;
      setLogLevel('debug');
      const { result: jobId, lines } = await capturingLogs(async () => {
        const res = await call('POST', `${V1}/generate/photo`, {
          images: [{ data: await jpegBase64() }], product_name: 'Cup', category_id: 'home', resolution: '1K', webhook_url: `${receiver.url}/traced`,
        }, { 'X-Request-Id': requestId });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result();
        await eventually(async () => receiver.requests.length, (n) => n >= 1);
        const deliveryId = receiver.requests[0].headers['x-service-job-id'] as string;
        await stack.temporal.workflow.getHandle(deliveryWorkflowId(deliveryId)).result();
        return deliveryId;
      });
      setLogLevel(level);
      assert.ok(jobId);
      await tracing()!.spanProcessor.forceFlush();

      const spans = exporter.getFinishedSpans();
      const server = spans.find((s) => s.name === 'POST /api/v1/public/generate/photo');
      assert.ok(server, `a server span named by the route template; got ${[...new Set(spans.map((s) => s.name))].join(', ')}`);
      assert.equal(server.attributes['request.id'], requestId);
      assert.equal(server.attributes['http.route'], '/api/v1/public/generate/photo');
      assert.equal(server.attributes['http.response.status_code'], 200);
      assert.equal(server.parentSpanId, undefined, 'the request starts the trace');
      const traceId = server.spanContext().traceId;
      const ours = spans.filter((s) => s.spanContext().traceId === traceId);
      const names = new Set(ours.map((s) => s.name));
      for (const name of [
        'StartWorkflow:actionWorkflow', 'RunWorkflow:actionWorkflow', 'StartChildWorkflow:webhookDeliveryWorkflow',
        'RunWorkflow:webhookDeliveryWorkflow', 'RunActivity:deliverWebhook', 'POST',
      ]) assert.ok(names.has(name), `${name} in the trace; it has ${[...names].join(', ')}`);
      // The action's own steps, local activities in its workflow task (the render too: the local renderer's), under its workflow.
      for (const step of ['startProcessing', 'generateAsset', 'completeAndPlanDeliveries']) {
        const span = ours.find((s) => s.name === `RunActivity:${step}`);
        assert.ok(span, `RunActivity:${step} in the trace`);
        assert.ok(ours.some((s) => s.spanContext().spanId === span.parentSpanId && s.name === `StartActivity:${step}`), `${step} is scheduled by the workflow`);
      }

      // Every span of the trace hangs from another of it, up to the request's.
      const byId = new Map(ours.map((s) => [s.spanContext().spanId, s]));
      for (const span of ours) if (span !== server) assert.ok(byId.has(span.parentSpanId!), `${span.name}'s parent is in the trace`);
      const ancestry = (span: ReadableSpan): string[] => (span.parentSpanId ? [span.name, ...ancestry(byId.get(span.parentSpanId)!)] : [span.name]);
      const deliveries = ours.filter((s) => s.name === 'POST');
      assert.equal(deliveries.length, 2, 'the refused attempt and the delivered one');
      assert.deepEqual(deliveries.map((s) => s.attributes['http.response.status_code']).sort(), [200, 503]);
      assert.deepEqual(ancestry(deliveries[0]).slice(0, 2), ['POST', 'RunActivity:deliverWebhook']);
      assert.ok(ancestry(deliveries[0]).includes('RunWorkflow:webhookDeliveryWorkflow'));
      assert.equal(ancestry(deliveries[0]).at(-1), 'POST /api/v1/public/generate/photo');
      assert.ok(!ours.some((s) => /\d{3,}|[0-9a-f]{8}-/.test(s.name)), 'no span is named by an id');

      // The action's log lines (the activity's own, the SDK's about it) carry the request id and the trace id.
      const refusal = lines.find((l) => l.msg === 'webhook answered with an error');
      assert.ok(refusal, 'the delivery activity logged the refusal');
      assert.equal(refusal.requestId, requestId);
      assert.equal(refusal.trace_id, traceId);
      const actionLines = lines.filter((l) => l.trace_id === traceId);
      const withoutRequestId = actionLines.filter((l) => l.requestId !== requestId);
      assert.deepEqual(withoutRequestId.map((l) => l.msg), [], 'every line of the trace has the request id');
    });

    it('names a server span by its route template, never by a path with ids; a path no route matches by its method', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 1)).apiKey);
      assert.equal((await call('GET', `${V1}/status/987654`)).status, 404);
      assert.equal((await call('GET', `${V1}/no-such-route/987654`)).status, 404);
      const names = exporter.getFinishedSpans().filter((s) => s.attributes['http.response.status_code'] === 404).map((s) => [s.name, s.attributes['http.route']]);
      assert.deepEqual(names, [['GET /api/v1/public/status/:action_id', '/api/v1/public/status/:action_id'], ['GET', undefined]]);
    });

    it('a provider SDK call is a client span under the activity\'s, failed when the call fails', async () => {
      const analysis = { category_id: 'home', product_name: 'Mug', qualities: ['Warm', 'Safe', 'Matte'] };
      const gemini = await startGeminiServer(() => jsonAnswer(analysis));
      try {
        const provider = new GeminiProvider({ apiKey: gemini.apiKey, baseUrl: gemini.baseUrl, imageModel: 'test-image-model', textModel: 'test-text-model', timeoutMs: 5_000 });
        const images = [Buffer.from(await jpegBase64(), 'base64')];
        const parent = trace.getTracer('test').startSpan('RunActivity:probe');
        await context.with(trace.setSpan(context.active(), parent), async () => {
          await provider.analyze(images, 'en');
          gemini.script(httpError(400, 'Your prompt "secret launch plan" was refused'));
          await assert.rejects(provider.analyze(images, 'en'), /secret launch plan/, 'the error itself keeps the provider\'s text');
        });
        parent.end();
        const calls = exporter.getFinishedSpans().filter((s) => s.parentSpanId === parent.spanContext().spanId);
        assert.deepEqual(calls.map((s) => [s.name, s.kind, s.attributes['gen_ai.request.model'], s.status.code]), [
          ['gemini generateContent', SpanKind.CLIENT, 'test-text-model', SpanStatusCode.UNSET],
          ['gemini generateContent', SpanKind.CLIENT, 'test-text-model', SpanStatusCode.ERROR],
        ]);
        // The failed span says what kind of failure (the failure class), never the provider's words.
        const failed = calls[1];
        assert.equal(failed.attributes['error.type'], failed.status.message);
        assert.match(String(failed.attributes['error.type']), /^[a-z_]+$/);
        assert.ok(!JSON.stringify({ attributes: failed.attributes, status: failed.status, events: failed.events }).includes('secret launch plan'), 'no provider text in the span');
      } finally {
        await gemini.close();
      }
    });

    it('a workflow\'s log line carries the request id and the trace id', async () => {
      // A failure of no shown type: the action's workflow logs it (through the sandbox's logger sink).
      const failing = await startStack({ workflowBundle: bundle, provider: new ScriptedProvider([ApplicationFailure.nonRetryable('boom', 'TestInternal') as never]) });
      try {
        const call = apiClient(failing.baseUrl, (await newAccount(failing.db, 100)).apiKey);
        const requestId = `trace-test-${randomUUID()}`;
        setLogLevel('warn');
        const { lines } = await capturingLogs(async () => {
          const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: await jpegBase64() }], product_name: 'Cup', category_id: 'home', resolution: '1K' },
            { 'X-Request-Id': requestId });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          await failing.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result();
        });
        setLogLevel(level);
        const server = exporter.getFinishedSpans().find((s) => s.attributes['request.id'] === requestId);
        assert.ok(server);
        const line = lines.find((l) => l.msg === 'generation failed for an internal reason');
        assert.ok(line, `the workflow logged the failure; got ${lines.map((l) => l.msg).join(' | ')}`);
        assert.equal(line.sdkComponent, 'workflow');
        assert.equal(line.requestId, requestId);
        assert.equal(line.trace_id, server.spanContext().traceId);
      } finally {
        setLogLevel(level);
        await failing.stop();
      }
    });

    it('every recorded history still replays with the tracing interceptors bundled (they add headers, no commands)', async () => {
      const histories = readdirSync(HISTORIES).filter((f) => f.endsWith('.json')).sort()
        .map((file) => ({ workflowId: file.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8'))) }));
      assert.ok(histories.length > 0);
      let count = 0;
      for await (const result of Worker.runReplayHistories({ workflowBundle: bundle }, histories)) {
        assert.equal(result.error, undefined, `${result.workflowId}: ${result.error}`);
        count++;
      }
      assert.equal(count, histories.length);
    });
  });

  describe('OTLP export', () => {
    it('sends finished spans as OTLP/HTTP protobuf to <endpoint>/v1/traces, and flushes them at shutdown', async () => {
      const posts: { path: string; type: string | undefined; bytes: number }[] = [];
      const collector = http.createServer((req, res) => {
        let bytes = 0;
        req.on('data', (c: Buffer) => { bytes += c.length; });
        req.on('end', () => {
          posts.push({ path: req.url!, type: req.headers['content-type'], bytes });
          res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
        });
      });
      await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
      try {
        installTracing({ serviceName: 'imagery-test', otlpEndpoint: `http://127.0.0.1:${(collector.address() as AddressInfo).port}/` });
        trace.getTracer('probe').startSpan('probe').end();
        await tracing()!.shutdown();
        assert.equal(tracing(), undefined);
        assert.deepEqual(posts.map((p) => [p.path, p.type]), [['/v1/traces', 'application/x-protobuf']]);
        assert.ok(posts[0].bytes > 0);
      } finally {
        await tracing()?.shutdown();
        collector.close();
      }
    });
  });
});
