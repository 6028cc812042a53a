/** Median, min and max of repeated measurements. */
export interface Stat {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

export function stat(samples: number[]): Stat | null {
  const clean = samples.filter((s) => Number.isFinite(s));
  if (clean.length === 0) return null;
  const sorted = [...clean].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1], samples: clean };
}

/** The p-th percentile (0-100) of unsorted values, nearest rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
