/**
 * Readiness of the API's dependencies, cheap to ask often: one probe at a time (concurrent callers share it) and
 * its answer reused for a couple of seconds, so `/readyz` cannot be used to hammer Postgres, Temporal or the object
 * store. Callers get words only; what failed and why (which can name internal addresses) goes to the log.
 */
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { log } from '../src/log';
import type { AssetStore } from '../src/storage/asset-store';

export type DependencyState = 'ok' | 'unavailable';
export interface Readiness {
  ready: boolean;
  checks: { database: DependencyState; temporal: DependencyState; storage: DependencyState };
}

const PROBE_TIMEOUT_MS = 2_000;
const READINESS_CACHE_MS = 2_000;

/** Runs `check` for at most PROBE_TIMEOUT_MS; the signal tells a check that can stop early that its time is up. */
async function probe(dependency: string, check: (signal: AbortSignal) => Promise<unknown>): Promise<DependencyState> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new AbortController();
  try {
    await Promise.race([check(deadline.signal), new Promise((_, reject) => {
      timer = setTimeout(() => {
        deadline.abort();
        reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`));
      }, PROBE_TIMEOUT_MS);
    })]);
    return 'ok';
  } catch (err) {
    log.warn('readiness probe failed', { dependency, error: (err as Error).message });
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/** Answers the readiness from a probe that ended less than `cacheMs` ago, else from the one in flight, else from a new one. */
export function readinessProbe(
  { db, temporal, store }: { db: DataSource; temporal: Client; store: AssetStore }, cacheMs = READINESS_CACHE_MS,
): () => Promise<Readiness> {
  let last: { at: number; readiness: Readiness } | undefined;
  let inFlight: Promise<Readiness> | undefined;
  const probeAll = async (): Promise<Readiness> => {
    const [database, temporalState, storage] = await Promise.all([
      probe('database', () => db.query('SELECT 1')),
      // The deadline ends the answer's wait. With the API's own client (@grpc/grpc-js) it also ends the client's
      // retries; with `npm start`'s native connection the SDK's core goes on retrying a failing call for up to 10 s
      // in the background, a cheap call, and probes are cached and shared while in flight.
      probe('temporal', () => temporal.connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () => temporal.connection.workflowService.getSystemInfo({}))),
      // A store with nothing to reach (the folder) has no check and is ready with the process.
      store.check ? probe('storage', (signal) => store.check!(signal)) : Promise.resolve<DependencyState>('ok'),
    ]);
    return {
      ready: database === 'ok' && temporalState === 'ok' && storage === 'ok',
      checks: { database, temporal: temporalState, storage },
    };
  };
  return async () => {
    if (last && Date.now() - last.at < cacheMs) return last.readiness;
    inFlight ??= probeAll().then((readiness) => {
      last = { at: Date.now(), readiness };
      inFlight = undefined;
      return readiness;
    });
    return inFlight;
  };
}
