/**
 * Readiness of the API's dependencies, cheap to ask often: one probe at a time (concurrent callers share it) and
 * its answer reused for a couple of seconds, so `/readyz` cannot be used to hammer Postgres or Temporal. Callers get
 * words only; what failed and why (which can name internal addresses) goes to the log.
 */
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { log } from '../src/log';

export type DependencyState = 'ok' | 'unavailable';
export interface Readiness {
  ready: boolean;
  checks: { database: DependencyState; temporal: DependencyState };
}

const PROBE_TIMEOUT_MS = 2_000;
const READINESS_CACHE_MS = 2_000;

async function probe(dependency: string, check: () => Promise<unknown>): Promise<DependencyState> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([check(), new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
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
export function readinessProbe({ db, temporal }: { db: DataSource; temporal: Client }, cacheMs = READINESS_CACHE_MS): () => Promise<Readiness> {
  let last: { at: number; readiness: Readiness } | undefined;
  let inFlight: Promise<Readiness> | undefined;
  const probeAll = async (): Promise<Readiness> => {
    const [database, temporalState] = await Promise.all([
      probe('database', () => db.query('SELECT 1')),
      // The deadline also ends the client's own retries, so a failing probe does not keep calling in the background.
      probe('temporal', () => temporal.connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () => temporal.connection.workflowService.getSystemInfo({}))),
    ]);
    return { ready: database === 'ok' && temporalState === 'ok', checks: { database, temporal: temporalState } };
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
