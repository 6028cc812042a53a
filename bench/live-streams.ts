/**
 * Memory of idle live-progress streams (issue 14: 1,000 idle SSE clients cost the API process less than 100 MiB):
 * one API process alone (no worker, so every action stays pending and its stream idle), each client holding
 * `GET /status/{id}/events` open on an action of its own, and the process's resident memory (VmRSS) before and after
 * they connect, the process fresh and warmed by a few polls and streams only. The clients use accounts of `DEFAULT_LIVE_STREAM_LIMITS.perKey` streams each, so the process runs
 * with its default limits.
 */
import http from 'node:http';
import { DEFAULT_LIVE_STREAM_LIMITS } from '../src/config';
import { apiClient, newAccount, V1 } from '../test/support/fixtures';
import { inBatches } from './load';
import { Figures, recordValue } from './measured';
import { rssMiB } from './processes';
import { startService, type ServiceContext } from './service';
import { sleep } from './stats';

/** Records `sse.rss_before`, `sse.rss_after` and `sse.growth` (MiB) of `ctx.settings.idleStreams` idle streams. */
export async function measureIdleStreams(ctx: ServiceContext, figures: Figures): Promise<void> {
  const clients = ctx.settings.idleStreams;
  const perKey = DEFAULT_LIVE_STREAM_LIMITS.perKey;
  const keys = await inBatches(Math.ceil(clients / perKey), 5, async (i) => (await newAccount(ctx.db, 100_000_000, `bench streams ${i}`)).apiKey);
  const keyOf = (i: number) => keys[Math.floor(i / perKey)];
  // The actions are made by another API process, so that the measured one's heap has not grown with a thousand
  // POSTs first (room the streams would then fill without a byte of RSS: a growth of nothing, measuring nothing).
  const seeder = await startService(ctx, 'api', 'api-live-streams-seed', 'bench-live-streams');
  let ids: number[];
  try {
    ids = await inBatches(clients, 20, async (i) => {
      const res = await apiClient(seeder.url, keyOf(i))('POST', `${V1}/generate/photo`, ctx.photoBody);
      if (res.status !== 200) throw new Error(`POST /generate/photo: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.action_id as number;
    });
  } finally {
    await seeder.stop();
  }
  const service = await startService(ctx, 'api', 'api-live-streams', 'bench-live-streams');
  const requests: http.ClientRequest[] = [];
  const open = (i: number) => new Promise<http.ClientRequest>((resolve, reject) => {
    const req = http.get(`${service.url}${V1}/status/${ids[i]}/events`, { headers: { Authorization: `Bearer ${keyOf(i)}` }, agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream ${i}: ${res.statusCode}`));
      res.once('data', () => resolve(req)); // its first bytes: the stream is live
    });
    req.on('error', reject);
    requests.push(req);
  });
  try {
    // Warm: the code paths a stream takes (a poll, a stream opened and closed), not the heap's size.
    const warm = Math.min(20, clients);
    await inBatches(warm, 10, (i) => apiClient(service.url, keyOf(i))('GET', `${V1}/status/${ids[i]}`));
    for (const req of await inBatches(warm, 10, open)) req.destroy();
    await sleep(2000);
    const before = rssMiB(service.pid);
    await inBatches(clients, 50, open);
    await sleep(2000); // the first events and reads settle
    const after = rssMiB(service.pid);
    recordValue(figures, 'sse.rss_before', before);
    recordValue(figures, 'sse.rss_after', after);
    recordValue(figures, 'sse.growth', after - before);
  } finally {
    for (const req of requests) req.destroy();
    await service.stop();
  }
}
