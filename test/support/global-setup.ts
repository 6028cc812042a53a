/** Mocha global fixtures: real Postgres and a real Temporal dev server for the whole run. */
import { setLogLevel } from '../../src/log';
import { setUpEnvironment, tearDownEnvironment } from './environment';

setLogLevel((process.env.LOG_LEVEL as 'debug' | 'info' | 'warn' | 'error' | undefined) ?? 'error');

export async function mochaGlobalSetup(): Promise<void> {
  await setUpEnvironment();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await tearDownEnvironment();
}
