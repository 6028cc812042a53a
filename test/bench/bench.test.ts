/**
 * The benchmark keeps starting: a tiny slice of `npm run bench` against the suite's own dev server and database
 * (the HTTP floors, the workflow floors, POST /generate/photo on a real API process, a second each, and 20 idle
 * live-progress streams, the dashboard's pages on an account of 20 actions in Chromium), and the report's shape.
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../src/db/data-source';
import { measureHttpFloors, measureWorkflowFloors } from '../../bench/floors';
import type { Figures } from '../../bench/measured';
import { stopAll } from '../../bench/processes';
import { backendReport, renderMarkdown, Report } from '../../bench/report';
import { resolveAnalysis } from '../../bench/analysis';
import { measureIdleStreams } from '../../bench/live-streams';
import { measureDashboardPages } from '../../bench/dashboard-pages';
import { measureAcceptItems } from '../../bench/accept-items';
import { measureAccept, photoBody, ServiceContext, serviceEnv } from '../../bench/service';
import { settingsFor } from '../../bench/settings';
import { newAccount, placeAction } from '../support/fixtures';
import { testEnvironment } from '../support/environment';

describe('benchmark harness (smoke)', function () {
  this.timeout(180_000);

  after(() => stopAll());

  it('measures a floor and a service figure and reports them beside each other', async () => {
    const env = testEnvironment();
    const settings = settingsFor('smoke');
    const db = await openDatabase(env.databaseUrl, { migrate: false, poolSize: 2 });
    try {
      const { accountId, apiKey } = await newAccount(db, 100_000_000); // the accept floor holds as the service does
      const actionId = await placeAction(db, accountId);
      const dataDir = path.join(os.tmpdir(), `imagery-bench-smoke-${process.pid}`);
      const figures: Figures = {};
      const body = await photoBody();
      const floorCtx = { settings, databaseUrl: env.databaseUrl, temporalAddress: env.temporalAddress, logDir: dataDir, apiKey, actionId };
      await measureHttpFloors(floorCtx, figures);
      await measureWorkflowFloors(floorCtx, figures, { starts: false, oneActivity: true }); // the starts in turn with the accepts below
      const ctx: ServiceContext = {
        settings, db, databaseUrl: env.databaseUrl, temporalAddress: env.temporalAddress, dataDir,
        photoBody: body,
        env: serviceEnv(dataDir),
      };
      await measureAccept(ctx, 'api', figures);
      await measureAcceptItems(ctx, figures, 1, 20);
      await measureIdleStreams(ctx, figures);
      await measureDashboardPages(ctx, figures, settings.dashboardActions, settings.dashboardRuns);

      const report = backendReport('dev', figures, settings, []);
      const byKey = (key: string) => report.rows.find((r) => r.key === key)!;
      for (const key of ['floor.const', 'floor.select', 'floor.starts', 'floor.accept', 'floor.e2e', 'floor.batch', 'svc.post_api']) {
        assert.ok(byKey(key).service && byKey(key).service!.median > 0, `${key} measured`);
      }
      const accepted = byKey('svc.post_api');
      assert.equal(accepted.floorKey, 'floor.accept', 'an accept is judged against the accept floor');
      assert.ok(accepted.ratio! > 0);
      assert.equal(byKey('svc.status').service, null, 'what was not measured says so');
      assert.equal(byKey('svc.status').note, 'not measured in this run');
      assert.equal(report.targets.length, 20); // issue 24's, and the five of catalogue batches (issue 27)
      const pages = report.targets.find((t) => t.figure.startsWith('the dashboard\'s pages'))!;
      assert.equal(typeof pages.pass, 'boolean', 'every dashboard page is measured and judged');
      assert.equal(report.dashboard!.pages.length, 7);
      const streams = report.targets.find((t) => t.figure.includes('idle live-progress'))!;
      assert.equal(typeof streams.pass, 'boolean', 'the streams\' memory is measured and judged');
      assert.match(streams.observed, /^[+-][\d.]+ MiB for 20 \(/);
      assert.ok(report.targets.every((t) => t.pass === null || typeof t.pass === 'boolean'));

      const full: Report = {
        mode: 'smoke', date: new Date().toISOString(), durationSec: 1, machine: { cpu: 'x', cores: 2, memoryGiB: 1, os: 'x' },
        versions: { node: process.version }, settings: { ...settings }, providerCostMs: [], backends: [report], notes: [],
      };
      // Where the CPU went: the service process and Temporal both worked for the accepted requests.
      for (const key of ['svc.post_api', 'floor.accept']) {
        const cpu = report.cpu.find((r) => r.key === key)!;
        assert.ok(cpu.perOperationMs.service! > 0 && cpu.perOperationMs.temporal! > 0 && cpu.totalMs! > 0, JSON.stringify(cpu));
        assert.ok(cpu.ceilingPerSecond! > 0);
      }

      // The accept's parts measured apart (at /proc's 10 ms resolution over 20 runs the smallest may read 0): every
      // part is measured and reported, the starts cost something, Temporal counts for starts only.
      const parts = new Map(report.acceptItems!.map((r) => [r.key, r.ms]));
      assert.deepEqual([...parts.keys()], ['body', 'image_check', 'store_input', 'idempotency_lookup', 'start_service', 'start_bare']);
      for (const [key, ms] of parts) assert.ok(ms.total !== null && ms.harness !== null, key);
      assert.ok(parts.get('start_service')!.temporal!.median > 0);
      assert.equal(parts.get('image_check')!.temporal, null);
      assert.match(renderMarkdown(full, ''), /\| the image checked \(its header: format, size, frames, colour space\) \| [\d.]+ \(/);

      const markdown = renderMarkdown(full, 'npm run bench', resolveAnalysis('## Analysis\n\nAccepted {{dev svc.post_api ratio}} of the accept floor; on the server {{server svc.post_api ratio}}.', full));
      assert.match(markdown, /\| POST \/generate\/photo accepted, API process alone \| req\/s \| [\d.]+ \|/);
      assert.match(markdown, /not measured/);
      assert.match(markdown, /CPU milliseconds per completed operation/);
      assert.match(markdown, /\| idle live-progress streams \| API process RSS MiB before/);
      assert.match(markdown, new RegExp(`Accepted ${accepted.ratio!.toFixed(2)} of the accept floor; on the server n/a\\.`), 'the analysis quotes this run');
    } finally {
      await db.destroy();
    }
  });
});
