/**
 * A floor may never do more than its real route: one floor request and one service request each, through a relay
 * that counts what they ask Postgres for (test/support/pg-wire-counter.ts), and the floor must have issued no more
 * statements and no more round trips than the service. Each is measured a few times and the fewest taken, so that
 * a process's background work (a timer's query) cannot count against a request.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { openDatabase } from '../../src/db/data-source';
import { freePort } from '../../ops/dev-server';
import { startServiceProcess, type ServiceProcess } from '../../ops/cluster/service-process';
import { startBenchChild, type BenchChild } from '../../bench/processes';
import { photoBody } from '../../bench/service';
import { newAccount, placeAction, V1 } from '../support/fixtures';
import { testEnvironment } from '../support/environment';
import { PgWireCounter, startPgWireCounter, WireCounts } from '../support/pg-wire-counter';

describe('benchmark floors against their routes, statement by statement', function () {
  this.timeout(120_000);
  let counter: PgWireCounter;
  let db: DataSource;
  let floor: BenchChild;
  let api: ServiceProcess;
  let floorUrl: string;
  let apiUrl: string;
  let apiKey: string;
  let actionId: number;
  let body: string;

  before(async () => {
    const env = testEnvironment();
    counter = await startPgWireCounter(env.databaseUrl);
    db = await openDatabase(env.databaseUrl, { migrate: false, poolSize: 2 });
    const account = await newAccount(db, 1_000_000);
    apiKey = account.apiKey;
    actionId = await placeAction(db, account.accountId);
    body = await photoBody();
    const floorPort = await freePort();
    floor = await startBenchChild('floor-server.js', [counter.url(env.databaseUrl), env.temporalAddress, String(floorPort)],
      path.join(os.tmpdir(), `imagery-floor-statements-${process.pid}.log`));
    floorUrl = `http://127.0.0.1:${floorPort}`;
    const apiPort = await freePort();
    api = await startServiceProcess('api', {
      DATABASE_URL: counter.url(env.databaseUrl), TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_TASK_QUEUE: `floor-statements-${process.pid}`,
      PORT: String(apiPort), PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`, DATA_DIR: path.join(os.tmpdir(), `imagery-floor-statements-${process.pid}`),
      ASSETS_DIR: path.join(os.tmpdir(), `imagery-floor-statements-${process.pid}`, 'assets'),
    });
    apiUrl = `http://127.0.0.1:${apiPort}`;
  });

  after(async () => {
    await api?.stop();
    await floor?.stop();
    await db?.destroy();
    await counter?.close();
  });

  /** The fewest statements and round trips one request of `send` costs, over five (after a warm-up of two). */
  async function fewest(send: () => Promise<Response>): Promise<WireCounts> {
    let best: WireCounts = { statements: Infinity, roundTrips: Infinity };
    for (let i = 0; i < 7; i++) {
      const before = counter.counts();
      const res = await send();
      assert.ok(res.ok, `${res.status} ${await res.text()}`);
      await res.arrayBuffer().catch(() => undefined);
      const after = counter.counts();
      if (i < 2) continue; // the first requests of a process prepare its statements and fill its pool
      best = {
        statements: Math.min(best.statements, after.statements - before.statements),
        roundTrips: Math.min(best.roundTrips, after.roundTrips - before.roundTrips),
      };
    }
    return best;
  }

  const auth = () => ({ Authorization: `Bearer ${apiKey}` });

  it('the poll floor asks no more of Postgres than GET /status/{id}', async () => {
    const service = await fewest(() => fetch(`${apiUrl}${V1}/status/${actionId}`, { headers: auth() }));
    const floorCounts = await fewest(() => fetch(`${floorUrl}/select/${actionId}`, { headers: auth() }));
    assert.deepEqual(floorCounts, { statements: 2, roundTrips: 2 }, 'the key by hash, then one select');
    assert.ok(floorCounts.statements <= service.statements && floorCounts.roundTrips <= service.roundTrips,
      `floor ${JSON.stringify(floorCounts)} against the service's ${JSON.stringify(service)}`);
  });

  it('the accept floor asks no more of Postgres than POST /generate/photo', async () => {
    const post = (url: string) => () => fetch(url, {
      method: 'POST', body, headers: { ...auth(), 'Content-Type': 'application/json', 'Idempotency-Key': randomUUID() },
    });
    const service = await fewest(post(`${apiUrl}${V1}/generate/photo`));
    const floorCounts = await fewest(post(`${floorUrl}/accept`));
    assert.deepEqual(floorCounts, { statements: 2, roundTrips: 2 }, 'the key by hash, then the one transaction');
    assert.ok(floorCounts.statements <= service.statements && floorCounts.roundTrips <= service.roundTrips,
      `floor ${JSON.stringify(floorCounts)} against the service's ${JSON.stringify(service)}`);
  });
});
