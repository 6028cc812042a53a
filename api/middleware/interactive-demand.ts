/**
 * Counts each interactive request into the process's demand meter while its handler runs (a live-progress stream
 * counts only until it is open; an asset only until its stream is handed to Node), so that batches yield to them
 * (src/batches/interactive-demand.ts). Requests under `batchPrefixes` are a batch's own traffic (a catalogue's
 * upload, its polls and manifests) and do not count.
 */
import type { Middleware } from 'koa';
import type { InteractiveDemandMeter } from '../../src/batches/interactive-demand';

export function countInteractiveDemand(meter: InteractiveDemandMeter, batchPrefixes: string[]): Middleware {
  return async (ctx, next) => {
    if (batchPrefixes.some((prefix) => ctx.path === prefix || ctx.path.startsWith(`${prefix}/`))) return next();
    const end = meter.begin();
    try {
      await next();
    } finally {
      end();
    }
  };
}
