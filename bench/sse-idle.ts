/**
 * Memory of idle live-progress streams: one real API process (`node dist/src/main.js api`, no worker, so the
 * actions stay pending and their streams idle), N clients each holding `GET /status/{id}/events` open on an action
 * of its own, and the API process's resident memory (VmRSS) before and after they connect. It sets up the test
 * environment (the `TEST_DATABASE_URL` database, recreated, and a Temporal dev server) as the suite does:
 *
 *   npm run build && TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/imagery_sse_bench \
 *     node dist/test/support/run-tests.js --exec dist/bench/sse-idle.js [clients]
 *
 * The target (issue 14): 1,000 idle clients cost the API process less than 100 MiB.
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startServiceProcess } from '../src/cluster/service-process';
import { openDatabase } from '../src/db/data-source';
import { freePort } from '../src/temporal/dev-server';
import { setUpEnvironment, tearDownEnvironment, testEnvironment } from '../test/support/environment';
import { apiClient, eventually, newAccount, V1 } from '../test/support/fixtures';
import { inBatches } from './load';
import { rssMiB } from './processes';
import { photoBody, serviceEnv } from './service';

async function main(): Promise<void> {
  const clients = Number(process.argv[2] ?? 1000);
  await setUpEnvironment();
  const env = testEnvironment();
  const db = await openDatabase(env.databaseUrl, { migrate: false });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = path.join(os.tmpdir(), `imagery-sse-bench-${process.pid}`);
  const api = await startServiceProcess('api', {
    ...serviceEnv(dataDir), DATABASE_URL: env.databaseUrl, TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_TASK_QUEUE: `sse-bench-${process.pid}`, PORT: String(port), PUBLIC_BASE_URL: url, DATA_DIR: dataDir,
  }, { logFile: path.join(dataDir, 'api.log') });
  const sockets: http.ClientRequest[] = [];
  try {
    const { apiKey } = await newAccount(db, 100_000_000, 'sse bench');
    const call = apiClient(url, apiKey);
    const body = await photoBody();
    const ids = await inBatches(clients, 20, async () => (await call('POST', `${V1}/generate/photo`, body)).body.action_id as number);
    // The process warmed by the same number of ordinary requests, then left to settle.
    await inBatches(clients, 20, async () => call('GET', `${V1}/status/${ids[0]}`));
    const pid = api.child.pid!;
    const before = rssMiB(pid);
    let open = 0;
    await inBatches(clients, 50, async (i: number) => new Promise<void>((resolve, reject) => {
      const req = http.get(`${url}${V1}/status/${ids[i]}/events`, { headers: { Authorization: `Bearer ${apiKey}` }, agent: false }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`stream ${i}: ${res.statusCode}`));
        res.once('data', () => { open++; resolve(); }); // the first event: the stream is live
      });
      req.on('error', reject);
      sockets.push(req);
    }));
    await eventually(async () => open, (n) => n === clients);
    const after = rssMiB(pid);
    const perClient = ((after - before) * 1024) / clients;
    process.stdout.write(`${JSON.stringify({ clients, rssBeforeMiB: before, rssAfterMiB: after, deltaMiB: after - before, perClientKiB: Math.round(perClient * 10) / 10, targetMiB: 100 })}\n`);
    if (after - before >= 100) process.exitCode = 1;
  } finally {
    for (const s of sockets) s.destroy();
    await api.stop(5_000);
    await db.destroy();
    await tearDownEnvironment();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
