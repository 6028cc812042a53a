/**
 * /readyz is unauthenticated: it answers words only (the failure detail goes to the log), and asking often costs
 * one probe of Postgres, Temporal and the object store at a time.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DataSource } from 'typeorm';
import { createApp } from '../../api/app';
import { readinessProbe } from '../../api/readiness';
import { openDatabase } from '../../src/db/data-source';
import { logLevel, setLogLevel } from '../../src/log';
import type { AssetStore } from '../../src/storage/asset-store';
import { testEnvironment, testS3Store } from '../support/environment';
import { apiClient } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('readiness', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false });
  });
  after(() => stack.stop());

  /** The service's log lines (JSON on stderr) written while `run` runs, at level warn and above. */
  async function logged<T>(run: () => Promise<T>): Promise<{ result: T; lines: Record<string, any>[] }> {
    const lines: string[] = [];
    const [write, level] = [process.stderr.write, logLevel()];
    process.stderr.write = ((chunk: string | Uint8Array) => lines.push(String(chunk)) > 0) as typeof process.stderr.write;
    setLogLevel('warn');
    try {
      return { result: await run(), lines: lines.map((l) => JSON.parse(l)) };
    } finally {
      process.stderr.write = write;
      setLogLevel(level);
    }
  }

  /** GET /readyz of an app built from the stack's services with some of them replaced. */
  async function readyz(replaced: { db?: DataSource; store?: AssetStore }) {
    const app = createApp({ ...stack.services, ...replaced });
    const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      return await logged(() => apiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)('GET', '/readyz'));
    } finally {
      server.close();
    }
  }

  it('answers 503 with words only when a dependency fails, and logs what failed', async () => {
    // A real database that goes away under its pool: its errors name it.
    const name = `imagery_readyz_${process.pid}`;
    const doomedUrl = new URL(testEnvironment().databaseUrl);
    doomedUrl.pathname = `/${name}`;
    const doomed = await openDatabase(doomedUrl.toString(), { migrate: false, poolSize: 1 });
    await stack.db.query(`DROP DATABASE ${name} WITH (FORCE)`);
    try {
      const { result: res, lines } = await readyz({ db: doomed });
      assert.equal(res.status, 503);
      assert.deepEqual(res.body, { status: 'unavailable', checks: { database: 'unavailable', temporal: 'ok', storage: 'ok' } });
      const failure = lines.find((l) => l.msg === 'readiness probe failed');
      assert.equal(failure?.dependency, 'database');
      assert.ok(failure.error.length > 10, failure.error);
      for (const detail of [name, failure.error]) assert.ok(!JSON.stringify(res.body).includes(detail), `the body must not carry "${detail}"`);
    } finally {
      await doomed.destroy().catch(() => undefined);
    }
  });

  it('answers 200 ready over HTTP', async () => {
    const res = await apiClient(stack.baseUrl)('GET', '/readyz');
    assert.deepEqual([res.status, res.body], [200, { status: 'ready', checks: { database: 'ok', temporal: 'ok', storage: 'ok' } }]);
  });

  describe('with an S3 store (the suite\'s gateway)', () => {
    it('is ready when the bucket answers to the credentials', async () => {
      const { result: res } = await readyz({ store: testS3Store() });
      assert.deepEqual([res.status, res.body], [200, { status: 'ready', checks: { database: 'ok', temporal: 'ok', storage: 'ok' } }]);
    });

    for (const [what, store] of [
      ['wrong credentials', () => testS3Store({ credentials: { accessKeyId: testEnvironment().s3.accessKey, secretAccessKey: 'not-the-secret' } })],
      ['an unknown access key', () => testS3Store({ credentials: { accessKeyId: 'nobody', secretAccessKey: 'nothing-at-all' } })],
      ['a bucket that does not exist', () => testS3Store({ bucket: 'no-such-bucket' })],
    ] as const) {
      it(`answers 503 storage unavailable for ${what}, with words only`, async () => {
        const { result: res, lines } = await readyz({ store: store() });
        assert.equal(res.status, 503);
        assert.deepEqual(res.body, { status: 'unavailable', checks: { database: 'ok', temporal: 'ok', storage: 'unavailable' } });
        const failure = lines.find((l) => l.msg === 'readiness probe failed');
        assert.equal(failure?.dependency, 'storage');
        assert.ok(!JSON.stringify(res.body).includes(testEnvironment().s3.endpoint), 'no address in the body');
      });
    }

    it('answers within the probe deadline when the S3 endpoint does not answer at all', async () => {
      // A listening socket that never answers: the probe gives up after its deadline.
      const silent = http.createServer(() => undefined).listen(0, '127.0.0.1');
      await new Promise((resolve) => silent.once('listening', resolve));
      try {
        const started = Date.now();
        const { result: res } = await readyz({ store: testS3Store({ endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` }) });
        assert.deepEqual([res.status, res.body.checks.storage], [503, 'unavailable']);
        assert.ok(Date.now() - started < 10_000, 'the probe deadline ends the check');
      } finally {
        silent.closeAllConnections();
        silent.close();
      }
    });
  });

  /** The stack's database, counting the statements run through it. */
  function countingDb(): { db: DataSource; count: () => number } {
    let queries = 0;
    const db = Object.create(stack.db) as DataSource;
    db.query = (...args: Parameters<DataSource['query']>) => {
      queries++;
      return stack.db.query(...args);
    };
    return { db, count: () => queries };
  }

  it('concurrent callers share one probe, and a recent answer is reused', async () => {
    const { db, count } = countingDb();
    const cached = readinessProbe({ db, temporal: stack.temporal, store: stack.store }, 60_000);
    const answers = await Promise.all(Array.from({ length: 20 }, () => cached()));
    assert.ok(answers.every((a) => a.ready));
    await cached();
    assert.equal(count(), 1, 'one probe for 21 callers');

    const { db: uncachedDb, count: uncachedCount } = countingDb();
    const uncached = readinessProbe({ db: uncachedDb, temporal: stack.temporal, store: stack.store }, 0);
    await Promise.all(Array.from({ length: 20 }, () => uncached()));
    assert.equal(uncachedCount(), 1, 'concurrent callers share the probe in flight');
    await uncached();
    assert.equal(uncachedCount(), 2, 'a later caller gets a new probe once the cache time is over');
  });
});
