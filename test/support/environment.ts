/**
 * The suite's shared real infrastructure, set up once by the mocha global fixture: a dedicated Postgres database
 * (recreated from the migrations on every run) and a Temporal dev server on free ports, plus one workflow bundle
 * that every test worker reuses.
 */
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { Client } from 'pg';
import { loadConfig } from '../../src/config';
import { ensureDatabaseExists, openDatabase } from '../../src/db/data-source';
import { DevServer, freePort, startDevServer } from '../../src/temporal/dev-server';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/imagery_test';

export interface TestEnvironment {
  databaseUrl: string;
  temporalAddress: string;
  workflowBundle: WorkflowBundleWithSourceMap;
  devServer: DevServer;
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

export async function setUpEnvironment(): Promise<void> {
  const config = loadConfig();
  const [devServer, workflowBundle] = await Promise.all([
    startDevServer({
      cliPath: config.temporalCliPath,
      toolsDir: config.toolsDir,
      port: await freePort(),
      logFile: path.join(os.tmpdir(), `imagery-test-temporal-${process.pid}.log`),
    }),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietLogger }),
    resetDatabase(TEST_DATABASE_URL),
  ]);
  current = { databaseUrl: TEST_DATABASE_URL, temporalAddress: devServer.address, workflowBundle, devServer };
}

export async function tearDownEnvironment(): Promise<void> {
  await current?.devServer.stop();
  current = undefined;
}

const noop = () => undefined;
export const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };
