/** How much a run measures: `full` (the committed figures), `quick` (under 2 minutes) or `smoke` (the test suite's). */
export type BenchMode = 'full' | 'quick' | 'smoke';

export interface BenchSettings {
  mode: BenchMode;
  /** Repetitions of each figure. */
  repeats: number;
  /** Seconds of each HTTP or start load. */
  durationSec: number;
  /** Connections (or starts) in flight. */
  connections: number;
  /** One-alone runs whose median is reported (one workflow, one job). */
  singleRuns: number;
  /**
   * Workflows of each batch figure, one size for all so that start-up and tail weigh alike: the floor's one-activity
   * workflows, the service's jobs, its webhook deliveries.
   */
  batch: number;
  /** Workflows in flight at which the worker's memory is read. */
  inFlightSteps: number[];
  /** Repetitions of each provider-cost render. */
  providerRepeats: number;
  /** Idle live-progress streams held open on one API process for its memory figure. */
  idleStreams: number;
  /** Restarts of `npm start` timed to healthy (the dev server's run only). */
  restartRuns: number;
  /** Jobs of the real-render burst through `npm start`'s one process (its memory figure; the dev server's run only). */
  burstJobs: number;
  /** Actions (over `largeAccounts` accounts) the database is grown to for the large-database figures (dev server's run only). */
  largeActions: number;
  largeAccounts: number;
  /** Runs of each part of an accept measured apart, per repetition (bench/accept-items.ts). */
  acceptItemRuns: number;
  /** Actions of the account whose dashboard pages are opened, and how many times each is (the dev server's run only). */
  dashboardActions: number;
  dashboardRuns: number;
  /** Items of the catalogue batch drained through one worker process. */
  batchItems: number;
}

export function settingsFor(mode: BenchMode): BenchSettings {
  if (mode === 'full') {
    return { mode, repeats: 5, durationSec: 10, connections: 50, singleRuns: 9, batch: 300, inFlightSteps: [1, 10, 100, 1000], providerRepeats: 3, idleStreams: 1000, restartRuns: 5, burstJobs: 1000, largeActions: 1_000_000, largeAccounts: 10_000, acceptItemRuns: 300, dashboardActions: 1000, dashboardRuns: 5, batchItems: 10_000 };
  }
  if (mode === 'quick') {
    return { mode, repeats: 1, durationSec: 2, connections: 50, singleRuns: 3, batch: 60, inFlightSteps: [1, 10, 100], providerRepeats: 1, idleStreams: 1000, restartRuns: 2, burstJobs: 100, largeActions: 100_000, largeAccounts: 1_000, acceptItemRuns: 100, dashboardActions: 1000, dashboardRuns: 2, batchItems: 500 };
  }
  return { mode, repeats: 1, durationSec: 1, connections: 10, singleRuns: 1, batch: 5, inFlightSteps: [1], providerRepeats: 1, idleStreams: 20, restartRuns: 1, burstJobs: 10, largeActions: 5_000, largeAccounts: 10, acceptItemRuns: 5, dashboardActions: 20, dashboardRuns: 1, batchItems: 20 };
}
