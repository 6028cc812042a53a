/** What each phase records: the samples of a figure, one per repetition, under a key the report knows. */
import type { LoadResult } from './load';

export interface Measured {
  /** The figure itself per repetition (per second, or milliseconds for latencies of one). */
  values: number[];
  p50: number[];
  p99: number[];
  max: number[];
  /** Failed operations over all repetitions (non-2xx, errors, timeouts). */
  failed: number;
  /** Why it was not measured, or what to know about it. */
  note?: string;
}

export type Figures = Record<string, Measured>;

export function recordLoad(figures: Figures, key: string, result: LoadResult): void {
  const m = (figures[key] ??= { values: [], p50: [], p99: [], max: [], failed: 0 });
  m.values.push(result.perSecond);
  m.p50.push(result.p50);
  m.p99.push(result.p99);
  m.max.push(result.max);
  m.failed += result.failed;
  if (result.note) m.note = m.note ? `${m.note}; ${result.note}` : result.note;
}

export function recordValue(figures: Figures, key: string, value: number, failed = 0): void {
  const m = (figures[key] ??= { values: [], p50: [], p99: [], max: [], failed: 0 });
  m.values.push(value);
  m.failed += failed;
}

export function notMeasured(figures: Figures, key: string, why: string): void {
  figures[key] = { values: [], p50: [], p99: [], max: [], failed: 0, note: why };
}
