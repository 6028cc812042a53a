/**
 * The analysis under the figures of BENCHMARKS.md is generated from the run it sits under: `bench/analysis.md` is
 * prose whose every figure is a placeholder, filled from that run's report, so a sentence can never quote another
 * run's numbers. What a change bought, measured in runs of its own and dated, is in `bench/changes.md`, pasted after.
 *
 * A placeholder is `{{<backend> <key> <field>}}`:
 * - `<backend>`: `dev` or `server`;
 * - `<key>` a figure (`svc.post_api`, `floor.accept`, ...) with `<field>` one of `median`, `min`, `max`, `p50`, `p99`,
 *   `slowest` (its slowest request or start, ms), `floor` (its floor's median) or `ratio`; or `cpu:<figure>` with a CPU group (`service`, `temporal`, `postgres`,
 *   `postgresShared`, `harness`, `other`), `total`, `busy` or `ceiling`; or `large:<figure>` with `small`, `large` or `ratio`; or
 *   `item:<part>` (an accept's part measured apart: `body`, `image_check`, ...) with `harness`, `postgres`, `temporal` or `total`; or
 *   `start` with `healthy` (seconds), `idle`, `peak` or `after` (MiB).
 * A backend the run did not measure reads "n/a"; a key or field that does not exist stops the rendering (a typo).
 */
import type { BackendReport, Report } from './report';
import { CPU_GROUPS, type CpuGroup } from './cpu';

const PLACEHOLDER = /\{\{\s*(dev|server)\s+(\S+)\s+(\S+)\s*\}\}/g;

/** A figure of the report, or undefined when the run did not measure it; throws on a key or field that cannot exist. */
function value(b: BackendReport, key: string, field: string): number | null | undefined {
  if (key.startsWith('cpu:')) {
    const row = b.cpu.find((r) => r.key === key.slice(4));
    if (!row) throw new Error(`no CPU figure ${key}`);
    if (field === 'total') return row.totalMs;
    if (field === 'busy') return row.busyCores;
    if (field === 'ceiling') return row.ceilingPerSecond;
    if ((CPU_GROUPS as readonly string[]).includes(field)) return row.perOperationMs[field as CpuGroup];
    throw new Error(`no field ${field} of ${key}`);
  }
  if (key.startsWith('large:')) {
    const row = (b.large ?? []).find((r) => r.key === key.slice(6));
    if (!row) return undefined;
    if (field === 'small') return row.small?.median;
    if (field === 'large') return row.large?.median;
    if (field === 'ratio') return row.ratio;
    throw new Error(`no field ${field} of ${key}`);
  }
  if (key.startsWith('item:')) {
    const row = (b.acceptItems ?? []).find((r) => r.key === key.slice(5));
    if (!row) throw new Error(`no accept part ${key}`);
    if (!(field in row.ms)) throw new Error(`no field ${field} of ${key}`);
    return row.ms[field as keyof typeof row.ms]?.median;
  }
  if (key === 'start') {
    if (field === 'healthy') return b.restart?.healthyMs ? b.restart.healthyMs.median / 1000 : undefined;
    const memory = b.startMemory;
    if (field === 'idle') return memory?.idleMiB?.median;
    if (field === 'peak') return memory?.peakMiB?.median;
    if (field === 'after') return memory?.afterMiB?.median;
    throw new Error(`no field ${field} of start`);
  }
  const row = b.rows.find((r) => r.key === key);
  if (!row) throw new Error(`no figure ${key}`);
  switch (field) {
    case 'median': case 'min': case 'max': return row.service?.[field];
    case 'p50': case 'p99': return row[field]?.median;
    case 'slowest': return row.max?.max;
    case 'floor': return row.floor?.median;
    case 'ratio': return row.ratio;
    default: throw new Error(`no field ${field} of ${key}`);
  }
}

function format(n: number): string {
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** The template with every placeholder filled from `report`. */
export function resolveAnalysis(template: string, report: Pick<Report, 'backends'>): string {
  return template.replace(PLACEHOLDER, (_whole, backend: string, key: string, field: string) => {
    const b = report.backends.find((x) => x.backend === backend);
    if (!b) return 'n/a';
    const v = value(b, key, field);
    return v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : format(v);
  });
}

/**
 * The figures a template writes out instead of taking them from the run: a number with a unit of measure
 * (ms, s, MiB, KiB, GiB, /s, x, %) outside a placeholder. The analysis must have none.
 */
export function literalFigures(template: string): string[] {
  const prose = template.replace(PLACEHOLDER, '');
  return [...prose.matchAll(/\b\d[\d,.]*\s?(?:ms|s|MiB|KiB|GiB|\/s|x|%)(?![A-Za-z])/g)].map((m) => m[0]);
}
