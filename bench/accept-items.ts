/**
 * What `POST /generate/photo` does beyond its accept floor, each part measured apart on the run's machine and
 * Temporal backend: the CPU it costs per accepted request, from /proc (bench/cpu.ts) around N runs of that part
 * alone, in this process, one after another (sharp configured as the API process configures it). The parts:
 * - the JSON body parsed and its image's base64 decoded (the floor never reads its body);
 * - the image checked by its header, as the route checks it (src/generation/image-limits.ts; the worker decodes the pixels);
 * - the input stored in the file asset store (temp file, rename);
 * - the Idempotency-Key looked up before any work (one prepared select, answered "none");
 * - the service's workflow start (typed, with its arguments, id policy, two search attributes and a summary),
 *   beside a bare start of the floor's kind, in turn, 10 in flight.
 * The API process's measured excess over the floor process, less these, is the rest of the route: Koa's middleware
 * (request id, metrics, the body's pace and limits, auth and the rate limit's bookkeeping, errors), the request's
 * validation, its price and project, building the accepting statement, the answer.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import sharp from 'sharp';
import type { DataSource } from 'typeorm';
import { findReplay } from '../src/idempotency/keys';
import { inputKey } from '../src/generation/images';
import { usableImage } from '../src/generation/image-limits';
import { FileAssetStore } from '../src/storage/asset-store';
import { startActionWorkflow } from '../src/temporal/starts';
import { measureCpu } from './cpu';
import { ACCEPT_ITEMS, type AcceptItem } from './report';
import { type Figures, recordValue } from './measured';
import { newAccount } from '../test/support/fixtures';

export interface AcceptItemsContext {
  db: DataSource;
  databaseUrl: string;
  temporalAddress: string;
  dataDir: string;
  photoBody: string;
}

/**
 * Runs `work` n times, `inFlight` at a time, and records its CPU per run as `item.<key>.<group>` for the groups of
 * processes the part uses, and their sum as `item.<key>.total`.
 */
async function measureItem(figures: Figures, key: AcceptItem, database: string, n: number, inFlight: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const { cpu } = await measureCpu({ servicePids: [], serviceDatabase: database }, () => Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < n) await work(next++);
  })));
  let total = 0;
  for (const group of ACCEPT_ITEMS[key].groups) {
    const ms = (cpu.seconds[group] * 1000) / n;
    recordValue(figures, `item.${key}.${group}`, ms);
    total += ms;
  }
  recordValue(figures, `item.${key}.total`, total);
}

export async function measureAcceptItems(ctx: AcceptItemsContext, figures: Figures, rounds: number, n: number): Promise<void> {
  // As the API process runs it (app/main.ts): one libvips thread a pipeline, no operation cache.
  const [concurrency, cache] = [sharp.concurrency(), sharp.cache()];
  sharp.concurrency(1);
  sharp.cache(false);
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: ctx.temporalAddress });
    const temporal = new Client({ connection, namespace: 'default' });
    const database = new URL(ctx.databaseUrl).pathname.slice(1);
    const store = new FileAssetStore(path.join(ctx.dataDir, 'accept-items'));
    const parsed = JSON.parse(ctx.photoBody) as { images: { data: string }[] };
    const bytes = Buffer.from(parsed.images[0].data, 'base64');
    const image = await usableImage(bytes);
    const { accountId } = await newAccount(ctx.db, 0, 'bench accept items');
    const firstId = 2_000_000_000 - Math.floor(Math.random() * 1_000_000_000); // far from the run's own actions
    let ids = 0;
    for (let round = 0; round < rounds; round++) {
      await measureItem(figures, 'body', database, n, 1, async () => Buffer.from((JSON.parse(ctx.photoBody) as typeof parsed).images[0].data, 'base64'));
      await measureItem(figures, 'image_check', database, n, 1, () => usableImage(bytes, { pixels: 'header' }));
      await measureItem(figures, 'store_input', database, n, 1, () => store.put(inputKey(image), image.bytes));
      await measureItem(figures, 'idempotency_lookup', database, n, 1, () => findReplay(ctx.db, {
        accountId, scope: 'v1:generate/photo', key: randomUUID(), requestHash: 'x',
      }));
      // The two starts in turn, so both meet the backend in the same state (a dev server's start costs more as it fills).
      await measureItem(figures, 'start_bare', database, n, 10, () => temporal.workflow.start('benchNoopWorkflow', {
        taskQueue: 'bench-items-unserved', workflowId: `bench-item-${randomUUID()}`,
      }));
      await measureItem(figures, 'start_service', database, n, 10, () => startActionWorkflow(temporal, 'bench-items-unserved', {
        id: firstId + ids++, accountId, type: 'generate', product: 'photo', provider: { taskQueue: 'bench-items-unserved-local' },
      }));
    }
  } finally {
    await connection?.close();
    sharp.concurrency(concurrency);
    sharp.cache({ memory: cache.memory.max, files: cache.files.max, items: cache.items.max });
  }
}
