/** What each phase records: the samples of a figure, one per repetition, under a key the report knows. */
import { CPU_GROUPS, CpuUse } from './cpu';
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

/**
 * The CPU of one repetition of a load, per completed operation: `cpu.<key>.<group>` in milliseconds for each group
 * of processes, and `cpu.<key>.busy`, the machine's busy cores over the load.
 */
export function recordCpu(figures: Figures, key: string, cpu: CpuUse, operations: number): void {
  if (operations <= 0) return;
  for (const group of CPU_GROUPS) recordValue(figures, `cpu.${key}.${group}`, (cpu.seconds[group] * 1000) / operations);
  recordValue(figures, `cpu.${key}.busy`, cpu.busyCores);
}

/** Drops what a phase that failed half way recorded of these figures (and their CPU), before they are measured again. */
export function dropFigures(figures: Figures, keys: string[]): void {
  for (const name of Object.keys(figures)) {
    if (keys.some((key) => name === key || name.startsWith(`cpu.${key}.`))) delete figures[name];
  }
}
