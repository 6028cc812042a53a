/**
 * The suite's shared real infrastructure, set up once by the mocha global fixture: a dedicated Postgres database
 * (recreated from the migrations on every run), a Temporal dev server and an S3 gateway (versitygw over a
 * throwaway folder) on free ports, plus one workflow bundle that every test worker reuses.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { Client } from 'pg';
import { loadConfig } from '../../src/config';
import { ensureDatabaseExists, openDatabase } from '../../src/db/data-source';
import { DevServer, freePort, startDevServer } from '../../ops/dev-server';
import { S3AssetStore, type S3AssetStoreOptions } from '../../src/storage/s3/s3-asset-store';
import { type S3Gateway, startS3Gateway } from '../../ops/s3-gateway';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/imagery_test';

export interface TestEnvironment {
  databaseUrl: string;
  temporalAddress: string;
  workflowBundle: WorkflowBundleWithSourceMap;
  devServer: DevServer;
  /** The local S3 server: one bucket shared by the suite (tests keep to their own key prefix, see `testS3Store`). */
  s3: S3Gateway & { bucket: string; accessKey: string; secretKey: string; dir: string };
}

let current: TestEnvironment | undefined;

export function testEnvironment(): TestEnvironment {
  if (!current) throw new Error('the global test fixture did not run (see .mocharc.json)');
  return current;
}

export async function resetDatabase(url: string): Promise<void> {
  await ensureDatabaseExists(url);
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('DROP SCHEMA IF EXISTS public CASCADE');
    await client.query('CREATE SCHEMA public');
  } finally {
    await client.end();
  }
  const db = await openDatabase(url, { migrate: true, poolSize: 1 });
  await db.destroy();
}

/**
 * Drops the Temporal server's database named by `url` and its visibility database (`<name>_visibility`), so that
 * the server's schema is set up from nothing on its next start.
 */
export async function dropTemporalDatabases(url: string): Promise<void> {
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.slice(1));
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    for (const db of [name, `${name}_visibility`]) await client.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

async function startTestS3(toolsDir: string): Promise<TestEnvironment['s3']> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'imagery-test-s3-'));
  const credentials = { accessKey: 'imagery-test', secretKey: randomBytes(20).toString('hex'), bucket: 'imagery-test' };
  const gateway = await startS3Gateway({
    toolsDir, dir, port: await freePort(), ...credentials, logFile: path.join(os.tmpdir(), `imagery-test-versitygw-${process.pid}.log`),
  });
  return { ...gateway, ...credentials, dir };
}

/** An S3 store on the suite's gateway, under a key prefix of its own (so tests never see each other's objects). */
export function testS3Store(options: Partial<S3AssetStoreOptions> = {}): S3AssetStore {
  const { s3 } = testEnvironment();
  return new S3AssetStore({
    bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region, forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey },
    prefix: `test-${randomUUID()}/`,
    ...options,
  });
}

export async function setUpEnvironment(): Promise<void> {
  const config = loadConfig();
  const [devServer, workflowBundle, , s3] = await Promise.all([
    startDevServer({
      cliPath: config.temporalCliPath,
      toolsDir: config.toolsDir,
      port: await freePort(),
      logFile: path.join(os.tmpdir(), `imagery-test-temporal-${process.pid}.log`),
    }),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietLogger }),
    resetDatabase(TEST_DATABASE_URL),
    startTestS3(config.toolsDir),
  ]);
  current = { databaseUrl: TEST_DATABASE_URL, temporalAddress: devServer.address, workflowBundle, devServer, s3 };
}

export async function tearDownEnvironment(): Promise<void> {
  await Promise.all([current?.devServer.stop(), current?.s3.stop()]);
  if (current) rmSync(current.s3.dir, { recursive: true, force: true });
  current = undefined;
}

const noop = () => undefined;
export const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };
