/**
 * From recorded samples to the report: each figure as median, min and max beside its floor and the ratio, the
 * issue's targets judged per backend, and BENCHMARKS.md.
 */
import os from 'node:os';
import { CPU_GROUP_LABELS, CPU_GROUPS, CpuGroup } from './cpu';
import type { Figures, Measured } from './measured';
import { Stat, stat } from './stats';

/** The groups of processes a part of an accept measured apart can be counted in: this process, the service's Postgres, Temporal. */
export const ITEM_GROUPS = ['harness', 'postgres', 'temporal'] as const satisfies readonly CpuGroup[];
type ItemGroup = typeof ITEM_GROUPS[number];

/**
 * The parts of an accept beyond its floor that bench/accept-items.ts measures apart, in the order the report shows
 * them, with the processes each one's CPU is counted in (this process always; the service's Postgres for a
 * statement; Temporal for a start): a process a part does not use would add only its idle noise.
 */
export const ACCEPT_ITEMS = {
  body: { label: 'the JSON body parsed, its image\'s base64 decoded', groups: ['harness'] },
  image_check: { label: 'the image checked (its header: format, size, frames, colour space)', groups: ['harness'] },
  store_input: { label: 'the input stored (temp file, rename)', groups: ['harness'] },
  idempotency_lookup: { label: 'the Idempotency-Key looked up before any work (one prepared select)', groups: ['harness', 'postgres'] },
  start_service: { label: 'the service\'s workflow start (arguments, id policy, two search attributes, summary)', groups: ['harness', 'temporal'] },
  start_bare: { label: 'a bare workflow start (the floor\'s)', groups: ['harness', 'temporal'] },
} as const satisfies Record<string, { label: string; groups: readonly ItemGroup[] }>;
export type AcceptItem = keyof typeof ACCEPT_ITEMS;


export type Backend = 'dev' | 'server';

export interface Row {
  key: string;
  label: string;
  unit: string;
  service: Stat | null;
  p50: Stat | null;
  p99: Stat | null;
  max: Stat | null;
  failed: number;
  floorKey?: string;
  floor: Stat | null;
  /** service median / floor median. */
  ratio: number | null;
  note?: string;
}

/** A figure on the large database beside the same figure on the small one (ratio large / small; above 1 is slower). */
export interface LargeRow {
  key: string;
  label: string;
  unit: string;
  small: Stat | null;
  large: Stat | null;
  ratio: number | null;
}

/** One part of an accept measured apart: CPU milliseconds per run by group of processes, and their sum. */
export interface AcceptItemRow {
  key: AcceptItem;
  label: string;
  ms: Record<typeof ITEM_GROUPS[number] | 'total', Stat | null>;
}

export interface Target {
  figure: string;
  target: string;
  /** null: not measured in this run. */
  pass: boolean | null;
  observed: string;
}

/** CPU milliseconds per completed operation of one load, by group of processes (medians of the repetitions). */
export interface CpuRow {
  key: string;
  label: string;
  perOperationMs: Record<CpuGroup, number | null>;
  totalMs: number | null;
  busyCores: number | null;
  /** Operations per second the machine's cores allow at this CPU per operation, all of them busy. */
  ceilingPerSecond: number | null;
}

export interface BackendReport {
  backend: Backend;
  rows: Row[];
  cpu: CpuRow[];
  cores: number;
  memory: { inFlight: number; rssMiB: Stat | null; perWorkflowMiB: Stat | null }[];
  idleWorkerRssMiB: Stat | null;
  /** The API process's memory with `clients` idle live-progress streams open (absent in reports made before it). */
  idleStreams?: { clients: number; rssBeforeMiB: Stat | null; rssAfterMiB: Stat | null; growthMiB: Stat | null };
  /** `npm start`'s one process through a burst of `jobs` real renders: idle before, peak during, a minute after. */
  startMemory?: { jobs: number; idleMiB: Stat | null; peakMiB: Stat | null; afterMiB: Stat | null };
  /** `npm start` of an unchanged checkout, from the command to a healthy answer. */
  restart?: { healthyMs: Stat | null };
  /** The parts of an accept beyond its floor, each measured apart (absent in reports made before it). */
  acceptItems?: AcceptItemRow[];
  /** The figures measured again on a database of `largeActions` actions, beside their small-database figure. */
  largeActions?: number;
  /** The fixed rate at which `all` mode's slowest request was judged (requests a second offered). */
  pacedOffered?: number | null;
  large?: LargeRow[];
  /** Each dashboard page's first render (ms) with `actions` in the account (absent in reports made before it). */
  dashboard?: { actions: number; pages: { page: string; ms: Stat | null }[] };
  targets: Target[];
  notes: string[];
}

export interface Report {
  mode: string;
  date: string;
  durationSec: number;
  machine: { cpu: string; cores: number; memoryGiB: number; os: string };
  versions: Record<string, string>;
  settings: Record<string, unknown>;
  providerCostMs: Row[];
  backends: BackendReport[];
  notes: string[];
}

const LABELS: Record<string, [string, string]> = {
  'floor.const': ['floor: bare Koa, constant', 'req/s'],
  'floor.select': ['floor: polls (bare Koa, raw pool: the key by hash, one indexed select, prepared)', 'req/s'],
  'floor.starts': ['floor: bare workflow starts, 50 in flight', 'starts/s'],
  'floor.accept': ['floor: accepts (bare Koa, raw pool: the key, one transaction, a bare start), 50 connections', 'req/s'],
  'floor.e2e': ['floor: one-activity workflow end to end, alone', 'ms'],
  'floor.batch': ['floor: one-activity workflows through one default worker', 'workflows/s'],
  'svc.status': ['GET /api/v1/public/status/{id}', 'req/s'],
  'svc.job': ['GET /api/v2/jobs/{id}', 'req/s'],
  'svc.balance': ['GET /api/v1/public/balance', 'req/s'],
  'svc.post_api': ['POST /generate/photo accepted, API process alone', 'req/s'],
  'svc.post_all': ['POST /generate/photo accepted, `all` mode (npm start), zero-cost renders', 'req/s'],
  'svc.post_all_paced': ['POST /generate/photo accepted, `all` mode (npm start), zero-cost renders, an open loop at 0.5 of bare starts', 'req/s'],
  'svc.post_all_real': ['POST /generate/photo accepted, `all` mode (npm start), real local renders meanwhile', 'req/s'],
  'svc.jobs': ['jobs finished, one worker process, zero-cost render', 'jobs/s'],
  'svc.one_job': ['one job alone, POST to `completed` in status', 'ms'],
  'svc.webhooks': ['webhook deliveries (redelivery burst) to a local receiver', 'deliveries/s'],
  'svc.batch': ['catalogue batch drained, one worker process, zero-cost render (POST to its end)', 'items/s'],
  'svc.batch_photo_idle': ['one interactive photo, POST to `completed`, beside an idle batch worker', 'ms'],
  'svc.batch_photo': ['one interactive photo, POST to `completed`, while the batch drains', 'ms'],
  'svc.batch_status_idle': ['GET /api/v1/public/status/{id} beside an idle batch worker', 'req/s'],
  'svc.batch_status': ['GET /api/v1/public/status/{id} while the batch drains', 'req/s'],
  'svc.batch_rss': ['batch worker RSS over its idle RSS, the most while the batch drains', 'MiB'],
  'svc.batch_history': ['the batch workflow\'s longest history among its runs', 'events'],
  'provider.photo': ['local renderer: photo 2K', 'ms'],
  'provider.card': ['local renderer: infographic card 2K', 'ms'],
  'provider.edit': ['local renderer: edit', 'ms'],
  'provider.video': ['local renderer: 5 s video', 'ms'],
};

/** Measured on the run's database and again on the large one; a rate's ratio is small/large, a time's large/small. */
export const LARGE_FIGURES: Record<string, { label: string; unit: 'req/s' | 'ms' }> = {
  status: { label: 'GET /status/{id}', unit: 'req/s' },
  job: { label: 'GET /api/v2/jobs/{id}', unit: 'req/s' },
  balance: { label: 'GET /balance', unit: 'req/s' },
  results_deepest: { label: 'GET /results, its deepest page', unit: 'ms' },
  results_group: { label: 'GET /results?client_group_id=', unit: 'ms' },
  projects_last: { label: 'GET /projects, its last page', unit: 'ms' },
  live_catch_up: { label: 'live progress of a completed action, caught up from the start', unit: 'ms' },
  reconciler_pass: { label: 'one reconciler pass', unit: 'ms' },
};

const FLOOR_OF: Record<string, string> = {
  'floor.select': 'floor.const',
  'svc.status': 'floor.select', 'svc.job': 'floor.select', 'svc.balance': 'floor.select',
  'svc.post_api': 'floor.accept', 'svc.post_all': 'floor.starts', 'svc.post_all_real': 'floor.starts',
  'svc.jobs': 'floor.batch', 'svc.webhooks': 'floor.batch', 'svc.one_job': 'floor.e2e',
  'svc.batch': 'floor.batch', 'svc.batch_photo': 'svc.batch_photo_idle', 'svc.batch_status': 'svc.batch_status_idle',
};

const SERVICE_ORDER = ['floor.const', 'floor.select', 'floor.starts', 'floor.accept', 'floor.e2e', 'floor.batch',
  'svc.status', 'svc.job', 'svc.balance', 'svc.post_api', 'svc.post_all', 'svc.post_all_paced', 'svc.post_all_real', 'svc.jobs', 'svc.one_job', 'svc.webhooks',
  'svc.batch', 'svc.batch_photo_idle', 'svc.batch_photo', 'svc.batch_status_idle', 'svc.batch_status', 'svc.batch_rss', 'svc.batch_history'];

export function row(figures: Figures, key: string): Row {
  const m: Measured | undefined = figures[key];
  const floorKey = FLOOR_OF[key];
  const service = m ? stat(m.values) : null;
  const floor = floorKey && figures[floorKey] ? stat(figures[floorKey].values) : null;
  return {
    key, label: LABELS[key]?.[0] ?? key, unit: LABELS[key]?.[1] ?? '',
    service, p50: m ? stat(m.p50) : null, p99: m ? stat(m.p99) : null, max: m ? stat(m.max) : null, failed: m?.failed ?? 0,
    floorKey, floor,
    ratio: service && floor && floor.median > 0 ? service.median / floor.median : null,
    note: m?.note ?? (service ? undefined : 'not measured in this run'),
  };
}

const CPU_KEYS = ['floor.select', 'svc.status', 'svc.job', 'svc.balance', 'floor.starts', 'floor.accept', 'svc.post_api', 'svc.post_all', 'svc.post_all_real', 'floor.batch', 'svc.jobs', 'svc.webhooks', 'svc.batch'];

const median = (figures: Figures, key: string): number | null => (figures[key] ? stat(figures[key].values)?.median ?? null : null);

function cpuRow(figures: Figures, key: string, cores: number): CpuRow {
  const perOperationMs = Object.fromEntries(CPU_GROUPS.map((g) => [g, median(figures, `cpu.${key}.${g}`)])) as Record<CpuGroup, number | null>;
  // Processes outside the service, its backends and the harness are noise on the machine, shown but not counted.
  const known = CPU_GROUPS.filter((g) => g !== 'other').map((g) => perOperationMs[g]).filter((v): v is number => v !== null);
  const totalMs = known.length ? known.reduce((a, b) => a + b, 0) : null;
  return {
    key, label: LABELS[key][0], perOperationMs, totalMs, busyCores: median(figures, `cpu.${key}.busy`),
    ceilingPerSecond: totalMs ? (cores * 1000) / totalMs : null,
  };
}

export function backendReport(
  backend: Backend, figures: Figures,
  steps: { inFlightSteps: number[]; idleStreams: number; burstJobs: number; largeActions: number; dashboardActions: number }, notes: string[],
): BackendReport {
  const rows = SERVICE_ORDER.map((key) => row(figures, key));
  const memory = steps.inFlightSteps.map((n) => ({
    inFlight: n,
    rssMiB: figures[`mem.rss.${n}`] ? stat(figures[`mem.rss.${n}`].values) : null,
    perWorkflowMiB: figures[`mem.per_workflow.${n}`] ? stat(figures[`mem.per_workflow.${n}`].values) : null,
  }));
  const cores = os.availableParallelism();
  const cpu = CPU_KEYS.map((key) => cpuRow(figures, key, cores));
  const figure = (key: string) => (figures[key] ? stat(figures[key].values) : null);
  const report: BackendReport = {
    backend, rows, cpu, cores, memory, idleWorkerRssMiB: figure('mem.idle'),
    idleStreams: { clients: steps.idleStreams, rssBeforeMiB: figure('sse.rss_before'), rssAfterMiB: figure('sse.rss_after'), growthMiB: figure('sse.growth') },
    restart: { healthyMs: figure('start.healthy') },
    startMemory: { jobs: steps.burstJobs, idleMiB: figure('start.idle'), peakMiB: figure('start.peak'), afterMiB: figure('start.after') },
    acceptItems: (Object.keys(ACCEPT_ITEMS) as AcceptItem[]).map((key) => ({
      key, label: ACCEPT_ITEMS[key].label,
      ms: Object.fromEntries([...ITEM_GROUPS, 'total'].map((g) => [g, figure(`item.${key}.${g}`)])) as AcceptItemRow['ms'],
    })),
    dashboard: {
      actions: steps.dashboardActions,
      pages: Object.keys(figures).filter((key) => key.startsWith('dash.')).map((key) => ({ page: key.slice('dash.'.length), ms: figure(key) })),
    },
    largeActions: figure('large.actions')?.median ?? steps.largeActions,
    pacedOffered: figure('svc.post_all_paced_offered')?.median ?? null,
    large: Object.entries(LARGE_FIGURES).map(([key, { label, unit }]) => {
      const small = figure(`large.${key}.small`);
      const large = figure(`large.${key}.large`);
      const ratio = small && large && small.median > 0 && large.median > 0 ? (unit === 'ms' ? large.median / small.median : small.median / large.median) : null;
      return { key, label, unit, small, large, ratio };
    }),
    targets: [], notes,
  };
  report.targets = judge(report);
  return report;
}

const byKey = (r: BackendReport, key: string) => r.rows.find((x) => x.key === key)!;
const f2 = (n: number | null | undefined) => (n === null || n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(2));

/** The median growth per idle stream, in KiB. */
const kibPerStream = (clients: number, growthMiB: Stat) => ((growthMiB.median * 1024) / clients).toFixed(1);

/** The issue's targets table (issue 24), judged on the medians of this run. */
export function judge(r: BackendReport): Target[] {
  const targets: Target[] = [];
  const ratioAtLeast = (key: string, min: number, figure = byKey(r, key).label) => {
    const x = byKey(r, key);
    targets.push({ figure, target: `>= ${min} of the floor`, pass: x.ratio === null ? null : x.ratio >= min, observed: `ratio ${f2(x.ratio)}` });
  };
  for (const key of ['svc.status', 'svc.job', 'svc.balance']) ratioAtLeast(key, 0.8);

  const starts = byKey(r, 'floor.starts');
  const ofStarts = (x: Row) => (x.service && starts.service && starts.service.median > 0 ? x.service.median / starts.service.median : null);
  const alone = byKey(r, 'svc.post_api');
  const acceptFloor = byKey(r, 'floor.accept');
  const p99Ratio = alone.p99 && acceptFloor.p99 ? alone.p99.median / acceptFloor.p99.median : null;
  const aloneOfStarts = ofStarts(alone);
  targets.push({
    figure: alone.label, target: '>= 0.8 of the accept floor and >= 0.5 of bare starts; p99 <= 2x the accept floor\'s p99',
    pass: alone.ratio === null || p99Ratio === null || aloneOfStarts === null ? null : alone.ratio >= 0.8 && aloneOfStarts >= 0.5 && p99Ratio <= 2,
    observed: `${f2(alone.ratio)} of the accept floor, ${f2(aloneOfStarts)} of bare starts, p99 ${f2(alone.p99?.median)} ms vs ${f2(acceptFloor.p99?.median)} ms (${f2(p99Ratio)}x)`,
  });
  // The ratio at saturation (50 connections); the slowest request at the rate that ratio asks for, in an open loop
  // (at saturation a request waits 50 / throughput by Little's law, whatever the service does), every one of its
  // requests answered 2xx and timed from when it was due. The bench's reading of the target: it names no rate.
  const all = byKey(r, 'svc.post_all');
  const paced = byKey(r, 'svc.post_all_paced');
  const offered = r.pacedOffered ?? null;
  targets.push({
    figure: all.label, target: '>= 0.5 of bare starts at saturation; no request over 1 s in an open loop at 0.5 of bare starts',
    pass: all.ratio === null || (!paced.max && paced.failed === 0) ? null : all.ratio >= 0.5 && paced.failed === 0 && !!paced.max && paced.max.max <= 1000,
    observed: `ratio ${f2(all.ratio)} at saturation (slowest there ${f2(all.max?.max)} ms); at ${f2(offered)}/s offered, ${paced.failed} failed, slowest request ${f2(paced.max?.max)} ms`,
  });
  ratioAtLeast('svc.post_all_real', 0.4);
  ratioAtLeast('svc.jobs', 0.8);
  ratioAtLeast('svc.webhooks', 0.8);
  const one = byKey(r, 'svc.one_job');
  targets.push({ figure: one.label, target: '<= 1.5x the one-activity floor end to end', pass: one.ratio === null ? null : one.ratio <= 1.5, observed: `${f2(one.ratio)}x` });

  // Catalogue batches (issue 27).
  ratioAtLeast('svc.batch', 0.8);
  const photo = byKey(r, 'svc.batch_photo');
  targets.push({ figure: photo.label, target: '<= 2x its idle end-to-end time', pass: photo.ratio === null ? null : photo.ratio <= 2, observed: `${f2(photo.ratio)}x` });
  const polls = byKey(r, 'svc.batch_status');
  targets.push({ figure: polls.label, target: '>= 0.8 of its idle throughput', pass: polls.ratio === null ? null : polls.ratio >= 0.8, observed: `ratio ${f2(polls.ratio)}` });
  const rss = byKey(r, 'svc.batch_rss');
  targets.push({ figure: rss.label, target: '<= +200 MiB', pass: rss.service ? rss.service.median <= 200 : null, observed: rss.service ? `+${f2(rss.service.median)} MiB` : 'not measured' });
  const history = byKey(r, 'svc.batch_history');
  targets.push({
    figure: history.label, target: '< 10,000 events per run', pass: history.service ? history.service.median < 10_000 : null,
    observed: history.service ? `${Math.round(history.service.median)} events` : 'not measured',
  });

  const burst = r.startMemory;
  targets.push({
    figure: `\`npm start\` RSS through a burst of ${burst?.jobs ?? 1000} jobs with real local renders`, target: '< 512 MiB during; idle + 100 MiB a minute after',
    pass: burst?.peakMiB && burst.idleMiB && burst.afterMiB ? burst.peakMiB.median < 512 && burst.afterMiB.median <= burst.idleMiB.median + 100 : null,
    observed: burst?.peakMiB && burst.idleMiB && burst.afterMiB
      ? `peak ${f2(burst.peakMiB.median)} MiB; idle ${f2(burst.idleMiB.median)}, a minute after ${f2(burst.afterMiB.median)} MiB` : 'not measured',
  });
  const healthy = r.restart?.healthyMs;
  targets.push({
    figure: '`npm start` of an unchanged checkout to healthy (Temporal already running)', target: '<= 5 s',
    pass: healthy ? healthy.median <= 5000 : null, observed: healthy ? `${f2(healthy.median / 1000)} s (${f2(healthy.min / 1000)}-${f2(healthy.max / 1000)})` : 'not measured',
  });
  const large = r.large ?? [];
  const worst = large.filter((x) => x.ratio !== null).sort((a, b) => b.ratio! - a.ratio!)[0];
  targets.push({
    figure: `${r.largeActions ?? 1_000_000} actions: each figure against the small database`, target: 'within 1.25x',
    pass: large.length === 0 || large.some((x) => x.ratio === null) ? null : large.every((x) => x.ratio! <= 1.25),
    observed: worst ? `worst ${worst.label}: ${f2(worst.ratio)}x` : 'not measured',
  });

  const pages = r.dashboard?.pages ?? [];
  const slowest = pages.filter((p) => p.ms).sort((a, b) => b.ms!.median - a.ms!.median)[0];
  targets.push({
    figure: `the dashboard's pages, first render with ${r.dashboard?.actions ?? 1000} actions in the account`, target: '< 1 s each',
    pass: pages.length === 0 || pages.some((p) => !p.ms) ? null : pages.every((p) => p.ms!.median < 1000),
    observed: slowest ? `slowest ${slowest.page}: ${f2(slowest.ms!.median)} ms (${pages.map((p) => `${p.page} ${p.ms ? Math.round(p.ms.median) : 'n/a'}`).join(', ')})` : 'not measured',
  });

  const at1000 = r.memory.find((m) => m.inFlight === 1000)?.perWorkflowMiB;
  targets.push({
    figure: 'worker memory per workflow in flight, 1,000 in flight', target: '<= 1 MiB',
    pass: at1000 ? at1000.median <= 1 : null, observed: at1000 ? `${f2(at1000.median)} MiB` : 'not measured (full mode only)',
  });
  const streams = r.idleStreams;
  const growth = streams?.growthMiB;
  const kibEach = streams && growth ? kibPerStream(streams.clients, growth) : '';
  // The target is for 1,000 streams; a run with fewer (the test suite's) is judged at the same cost per stream.
  const at1000Streams = growth && streams.clients > 0 ? (growth.median * 1000) / streams.clients : null;
  targets.push({
    figure: 'API process memory, 1,000 idle live-progress (SSE) streams', target: '< 100 MiB',
    pass: at1000Streams === null ? null : at1000Streams < 100,
    observed: growth ? `${growth.median >= 0 ? '+' : ''}${growth.median.toFixed(1)} MiB for ${streams.clients} (${kibEach} KiB each)` : 'not measured',
  });
  return targets;
}

function fmt(n: number, unit: string): string {
  if (!Number.isFinite(n)) return 'n/a';
  if (unit === 'ms') return n < 10 ? n.toFixed(1) : n.toFixed(0);
  return n < 100 ? n.toFixed(1) : n.toFixed(0);
}

function cell(s: Stat | null, unit: string): string {
  if (!s) return 'not measured';
  return s.samples.length > 1 ? `${fmt(s.median, unit)} (${fmt(s.min, unit)}-${fmt(s.max, unit)})` : fmt(s.median, unit);
}

function latencyCell(r: Row): string {
  if (!r.p50 || r.p50.samples.length === 0) return '';
  return `${fmt(r.p50.median, 'ms')} / ${fmt(r.p99!.median, 'ms')} / ${fmt(r.max!.max, 'ms')}`;
}

export function backendTable(b: BackendReport): string {
  const lines = [
    '| figure | unit | service: median (min-max) | p50 / p99 / max ms | floor: median (min-max) | ratio | failed |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of b.rows) {
    lines.push(`| ${r.label} | ${r.unit} | ${cell(r.service, r.unit)}${r.note && r.service ? ` (${r.note})` : ''} | ${latencyCell(r)} | ${r.floorKey ? `${cell(r.floor, r.unit)}` : ''} | ${r.ratio === null ? '' : f2(r.ratio)} | ${r.failed || ''} |`);
  }
  lines.push('', '| workflows in flight | worker RSS MiB | MiB per workflow (growth over idle) |', '| --- | --- | --- |');
  lines.push(`| 0 (idle worker) | ${cell(b.idleWorkerRssMiB, 'MiB')} | |`);
  for (const m of b.memory) lines.push(`| ${m.inFlight} | ${cell(m.rssMiB, 'MiB')} | ${m.perWorkflowMiB ? m.perWorkflowMiB.median.toFixed(3) : 'not measured'} |`);
  const streams = b.idleStreams;
  if (streams?.growthMiB) {
    lines.push('', '| idle live-progress streams | API process RSS MiB before | after | growth MiB | KiB per stream |', '| --- | --- | --- | --- | --- |');
    lines.push(`| ${streams.clients} | ${cell(streams.rssBeforeMiB, 'MiB')} | ${cell(streams.rssAfterMiB, 'MiB')} | ${cell(streams.growthMiB, 'MiB')} | ${kibPerStream(streams.clients, streams.growthMiB)} |`);
  }
  if (b.startMemory?.peakMiB || b.restart?.healthyMs) {
    lines.push('', '| `npm start`\'s one process | figure |', '| --- | --- |');
    if (b.restart?.healthyMs) lines.push(`| restart of an unchanged checkout, from the command to healthy | ${cell(b.restart.healthyMs, 'ms')} ms |`);
    const m = b.startMemory;
    if (m?.peakMiB) lines.push(`| RSS idle, warm | ${cell(m.idleMiB, 'MiB')} MiB |`, `| RSS at the peak of ${m.jobs} real renders | ${cell(m.peakMiB, 'MiB')} MiB |`, `| RSS a minute after they ended | ${cell(m.afterMiB, 'MiB')} MiB |`);
  }
  if (b.large?.some((x) => x.small || x.large)) {
    lines.push('', `| figure | unit | small database | ${b.largeActions ?? ''} actions | ratio (above 1: slower) |`, '| --- | --- | --- | --- | --- |');
    for (const x of b.large) lines.push(`| ${x.label} | ${x.unit} | ${cell(x.small, x.unit)} | ${cell(x.large, x.unit)} | ${f2(x.ratio)} |`);
  }
  lines.push('', '| target | wanted | observed | result |', '| --- | --- | --- | --- |');
  for (const t of b.targets) lines.push(`| ${t.figure} | ${t.target} | ${t.observed} | ${t.pass === null ? 'not measured' : t.pass ? 'pass' : 'FAIL'} |`);
  return lines.join('\n');
}

/** Where the CPU of the polls, the POST loads, the jobs and the deliveries and of their floors goes, and what that allows on this machine. */
export function cpuSection(b: BackendReport): string[] {
  const rows = b.cpu.filter((r) => r.totalMs !== null);
  if (rows.length === 0) return [];
  const ms = (v: number | null) => (v === null ? 'n/a' : v.toFixed(2));
  const out = [
    `CPU milliseconds per completed operation, by process, medians of the repetitions (Linux /proc, every process of the machine; ${b.cores} cores):`,
    '',
    `| load | ${CPU_GROUPS.map((g) => CPU_GROUP_LABELS[g]).join(' | ')} | total | busy cores | most per second on ${b.cores} cores at this CPU |`,
    `| --- | ${CPU_GROUPS.map(() => '---').join(' | ')} | --- | --- | --- |`,
    ...rows.map((r) => `| ${r.label} | ${CPU_GROUPS.map((g) => ms(r.perOperationMs[g])).join(' | ')} | ${ms(r.totalMs)} | ${r.busyCores === null ? 'n/a' : r.busyCores.toFixed(2)} | ${r.ceilingPerSecond === null ? 'n/a' : r.ceilingPerSecond.toFixed(0)} |`),
    '',
  ];
  const targets = [
    ['svc.status', 0.8, 'poll'], ['svc.job', 0.8, 'poll'], ['svc.balance', 0.8, 'poll'],
    ['svc.post_api', 0.8, 'accepted request'], ['svc.post_all', 0.5, 'accepted request'], ['svc.post_all_real', 0.4, 'accepted request'],
    ['svc.jobs', 0.8, 'finished job'], ['svc.webhooks', 0.8, 'delivery'],
  ] as const;
  for (const [key, share, unit] of targets) {
    const r = b.cpu.find((x) => x.key === key);
    const measured = b.rows.find((x) => x.key === key);
    const floorRow = b.rows.find((x) => x.key === measured?.floorKey);
    const floor = floorRow?.service;
    const floorCpu = b.cpu.find((x) => x.key === floorRow?.key);
    const accepted = measured?.service;
    if (!r?.totalMs || !floor || !accepted || !floorRow) continue;
    const wanted = floor.median * share;
    const budget = (b.cores * 1000) / wanted;
    out.push(`- ${r.label}: ${share} of its floor (${floorRow.label.replace(/^floor: /, '')}: ${floor.median.toFixed(0)}/s) is ${wanted.toFixed(0)}/s, which leaves ${budget.toFixed(2)} ms of CPU per ${unit} ` +
      `with all ${b.cores} cores busy. The service spent ${r.totalMs.toFixed(2)} ms (Temporal ${ms(r.perOperationMs.temporal)}, ` +
      `the service process ${ms(r.perOperationMs.service)}, its Postgres ${ms(r.perOperationMs.postgres)}, the load generator ${ms(r.perOperationMs.harness)})` +
      `${floorCpu?.totalMs ? `, its floor ${floorCpu.totalMs.toFixed(2)} ms (Temporal ${ms(floorCpu.perOperationMs.temporal)}, its process ${ms(floorCpu.perOperationMs.service)}, Postgres ${ms(floorCpu.perOperationMs.postgres)})` : ''}` +
      `: the service's own work costs ${floorCpu?.totalMs ? (r.totalMs - floorCpu.totalMs).toFixed(2) : 'n/a'} ms more per ${unit} than its floor's. ` +
      `At most ${r.ceilingPerSecond!.toFixed(0)}/s fit at this CPU (a ratio of ${(r.ceilingPerSecond! / floor.median).toFixed(2)}); it did ${accepted.median.toFixed(0)}/s` +
      `${r.busyCores !== null ? ` with ${r.busyCores.toFixed(2)} of ${b.cores} cores busy` : ''}.`);
  }
  out.push('');
  return out;
}

/**
 * The accept's parts beyond its floor, measured apart, and what is left of the API process's excess over the floor
 * process once they are taken away (the rest of the route: middleware, validation, price, project, statement, answer).
 */
export function acceptItemsSection(b: BackendReport): string[] {
  const items = (b.acceptItems ?? []).filter((r) => r.ms.total !== null);
  if (items.length === 0) return [];
  const ms = (v: Stat | null | undefined) => (v ? `${v.median.toFixed(2)} (${v.min.toFixed(2)}-${v.max.toFixed(2)})` : 'n/a');
  const out = [
    'What `POST /generate/photo` does beyond its accept floor, each part measured apart in the harness process (bench/accept-items.ts), CPU milliseconds per run, medians of the repetitions with min and max:',
    '',
    `| part | ${ITEM_GROUPS.map((g) => CPU_GROUP_LABELS[g].replace(' (load generator)', ' (the part itself)')).join(' | ')} | total |`,
    `| --- | ${ITEM_GROUPS.map(() => '---').join(' | ')} | --- |`,
    ...items.map((r) => `| ${r.label} | ${ITEM_GROUPS.map((g) => ((ACCEPT_ITEMS[r.key].groups as readonly ItemGroup[]).includes(g) ? ms(r.ms[g]) : '-')).join(' | ')} | ${ms(r.ms.total)} |`),
    '',
  ];
  const part = (key: AcceptItem) => items.find((r) => r.key === key)?.ms.total?.median;
  const service = b.cpu.find((r) => r.key === 'svc.post_api');
  const floor = b.cpu.find((r) => r.key === 'floor.accept');
  const parts = (['body', 'image_check', 'store_input', 'idempotency_lookup'] as const).map(part);
  const [serviceStart, bareStart] = [part('start_service'), part('start_bare')];
  if (service?.totalMs && floor?.totalMs && parts.every((v) => v !== undefined) && serviceStart !== undefined && bareStart !== undefined) {
    const excess = service.totalMs - floor.totalMs;
    const itemised = parts.reduce((a, v) => a + v!, 0) + (serviceStart - bareStart);
    out.push(`- An accepted request cost ${excess.toFixed(2)} ms more than a floor accept under load (the CPU table above). The parts measured apart ` +
      `account for ${itemised.toFixed(2)} ms of it: the body ${parts[0]!.toFixed(2)}, the image check ${parts[1]!.toFixed(2)}, storing the input ${parts[2]!.toFixed(2)}, ` +
      `the Idempotency-Key look-up ${parts[3]!.toFixed(2)}, the service's start ${(serviceStart - bareStart).toFixed(2)} beyond a bare one. ` +
      `The other ${(excess - itemised).toFixed(2)} ms are the rest of the route (middleware, validation, price, project, the accepting statement, the answer) ` +
      'and what a busier machine costs every process (a start costs Temporal more CPU the fewer arrive a second).', '');
  }
  return out;
}

export function renderMarkdown(report: Report, howToRun: string, analysis = ''): string {
  const out: string[] = [
    '# Benchmarks',
    '',
    `Generated by \`npm run bench${report.mode === 'full' ? '' : ` -- --${report.mode}`}\` on ${report.date} (${report.mode} run, ${Math.round(report.durationSec)} s). ` +
    'Every figure is the median of the repetitions with min and max, beside its floor measured in the same run on the same machine, and the ratio service/floor ' +
    '(for latencies a ratio above 1 is slower than the floor). The machine has few cores and is shared: compare ratios, not absolute figures.',
    '',
    '## Machine and versions',
    '',
    `- CPU: ${report.machine.cpu}, ${report.machine.cores} cores; memory ${report.machine.memoryGiB.toFixed(1)} GiB; ${report.machine.os}`,
    ...Object.entries(report.versions).map(([k, v]) => `- ${k}: ${v}`),
    `- settings: ${Object.entries(report.settings).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(', ')}`,
    '',
  ];
  for (const b of report.backends) {
    out.push(`## Temporal backend: ${b.backend === 'dev' ? 'the dev server (Temporal CLI, SQLite file)' : 'the Temporal server on Postgres'}`, '', backendTable(b), '');
    out.push(...cpuSection(b));
    out.push(...acceptItemsSection(b));
    if (b.notes.length) out.push(...b.notes.map((n) => `- ${n}`), '');
  }
  out.push('## The provider\'s own cost (measured apart, normal mode, no delay, one at a time in the harness process)', '',
    '| render | ms: median (min-max) |', '| --- | --- |',
    ...report.providerCostMs.map((r) => `| ${r.label} | ${cell(r.service, 'ms')} |`), '');
  if (report.notes.length) out.push('## Notes', '', ...report.notes.map((n) => `- ${n}`), '');
  if (analysis.trim()) out.push(analysis.trim(), '');
  out.push('## How to run', '', howToRun, '');
  return out.join('\n');
}
