/**
 * `npm start`'s one process (`all` mode) through a burst of real local renders (no demo delay): its RSS once warm and
 * idle, its peak while the burst is accepted and rendered (read from /proc every 200 ms), and a minute after the
 * last job ended.
 */
import type { Figures } from './measured';
import { recordValue } from './measured';
import { inBatches } from './load';
import { rssMiB } from './processes';
import { expectOk, benchAccount, countActions, startService, TERMINAL, type ServiceContext } from './service';
import { sleep } from './stats';
import { eventually, V1 } from '../test/support/fixtures';

export async function measureStartMemory(ctx: ServiceContext, figures: Figures, jobs: number, settleMs = 60_000): Promise<void> {
  const service = await startService(ctx, 'all', 'all-memory', 'bench-start-memory', { LOCAL_RENDERER_COST: 'normal', LOCAL_RENDERER_DELAY_MS: '0' });
  try {
    const account = await benchAccount(ctx.db, 'bench start memory');
    const post = async () => (await expectOk(service.url, account.apiKey, 'POST', `${V1}/generate/photo`, ctx.photoBody)).action_id as number;
    // Warm: a few jobs through every step, then a moment of rest.
    const warm = await inBatches(10, 5, post);
    await eventually(() => countActions(ctx.db, warm, TERMINAL), (n) => n === warm.length, 120_000, 100);
    await sleep(5_000);
    recordValue(figures, 'start.idle', rssMiB(service.pid));

    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB(service.pid));
    }, 200);
    try {
      const ids = await inBatches(jobs, 10, post);
      await eventually(() => countActions(ctx.db, ids, TERMINAL), (n) => n === ids.length, 1_800_000, 500);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rssMiB(service.pid));
    recordValue(figures, 'start.peak', peak);
    await sleep(settleMs);
    recordValue(figures, 'start.after', rssMiB(service.pid));
  } finally {
    await service.stop();
  }
}
