/** Mocha global fixtures: real Postgres and a real Temporal dev server for the whole run. */
import { setLogLevel } from '../../src/log';
import { setUpEnvironment, tearDownEnvironment } from './environment';
import { installRuntime } from '../../app/worker';

setLogLevel((process.env.LOG_LEVEL as 'debug' | 'info' | 'warn' | 'error' | undefined) ?? 'error');
installRuntime(); // the SDK logs at our level from the first worker (or replay) on

export async function mochaGlobalSetup(): Promise<void> {
  await setUpEnvironment();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await tearDownEnvironment();
}
