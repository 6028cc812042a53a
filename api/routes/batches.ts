/**
 * Catalogue batches (v2): many photos, cards, videos and edits in one request, run by one batch workflow as
 * ordinary v2 jobs, exactly once per `external_id`, under a budget. Unknown, malformed and foreign batch ids are
 * the same 404 `not_found`.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import type { Context } from 'koa';
import { cancelJob } from '../../src/actions/cancel';
import { checkItems } from '../../src/batches/create';
import {
  batchTotals, type BatchRow, cancelBatchRecord, createBatch, ENDED_BATCH_STATUSES, forgetBatch, ITEM_STATUSES, type ItemRow, itemsPage,
  type ItemStatus, ITEM_TYPES, type ItemType, type NewItem, readBatch,
} from '../../src/batches/store';
import { AppError, generationUnavailable, notFound, ValidationFailed, type ValidationIssue } from '../../src/errors';
import { checkWebhookUrl } from '../../src/webhooks/urls';
import { keyInFlight, refusedClaim, type StoredResponse } from '../../src/idempotency/keys';
import { workflowState } from '../../src/temporal/workflow-state';
import { batchWorkflowId } from '../../src/temporal/contract';
import { log } from '../../src/log';
import type { Caller } from '../../src/services';
import { startBatchWorkflow } from '../../src/temporal/starts';
import { answerRepeat, idempotencyHeader, send } from '../idempotency';
import type { NdjsonLines } from '../middleware/json-body';
import { iso } from '../representations';
import { bodyLimit, type Route, UUID, V2_PREFIX } from '../route';
import {
  batchSchema, createBatchQuery, EXTERNAL_ID, createBatchSchema, type CreateBatchBody, ITEM_SCHEMAS, itemHeadSchema, itemSchema, MAX_BATCH_BODY_BYTES, MAX_JSON_ITEMS,
  MAX_NDJSON_ITEMS,
} from '../schemas/batches';
import type { ApiServices } from '../services';
import { streamSnapshots } from '../live/snapshot-stream';
import { compileValidator } from '../validation';

const batchIdPath = { type: 'object', required: ['batch_id'], properties: { batch_id: { type: 'string', maxLength: 64, description: 'UUID' } } };

const validateHead = compileValidator('body', itemHeadSchema);
const validateItem = Object.fromEntries(Object.entries(ITEM_SCHEMAS).map(([type, schema]) => [type, compileValidator('body', schema)])) as Record<ItemType, (value: unknown) => unknown>;

/** The body limit of each item type's single request (the contract's limits apply per item). */
const ITEM_BYTES: Record<ItemType, number> = {
  photo: bodyLimit({ bodyImages: 5 }).bytes, card: bodyLimit({ bodyImages: 6 }).bytes, video: bodyLimit({ bodyImages: 2 }).bytes, edit: bodyLimit({}).bytes,
};

/** A string field of a sent item (whatever was sent: it may not even be an object), up to 100 characters, or null. */
function fieldOf(item: unknown, field: string): string | null {
  const value = item !== null && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>)[field] : undefined;
  return typeof value === 'string' && value.length <= EXTERNAL_ID.maxLength ? value : null;
}

/** A sent item's type when it is one of ours, or null. */
const typeOf = (item: unknown): ItemType | null => {
  const type = fieldOf(item, 'type');
  return ITEM_TYPES.includes(type as ItemType) ? type as ItemType : null;
};

/** One refused item, as the 422 lists it. */
interface InvalidItem { index: number; line?: number; external_id: string | null; errors: { loc?: (string | number)[]; code?: string; message: string }[] }

/**
 * Polls of a live batch: soon while it waits to start, every few seconds while it runs, and while a cancelled
 * batch's running items finish or cancel; null once nothing of it will move again.
 */
function checkAgainInSec(status: string, running = 0): number | null {
  if (ENDED_BATCH_STATUSES.includes(status as never)) return running > 0 ? 2 : null;
  return status === 'queued' ? 2 : 5;
}

export function batchRoutes(services: ApiServices): Route[] {
  const { db, signer, temporal, config, liveEvents } = services;

  async function ownBatch(ctx: Context, batchId: string): Promise<BatchRow> {
    if (!UUID.test(batchId)) throw notFound('Batch');
    const batch = await readBatch(db.manager, batchId.toLowerCase());
    if (!batch || batch.account_id !== (ctx.state.caller as Caller).accountId) throw notFound('Batch');
    return batch;
  }

  async function batchView(batch: BatchRow) {
    const totals = await batchTotals(db.manager, batch.id);
    return {
      batch_id: batch.id, status: batch.status, items: batch.items, counts: totals.counts, price: batch.price, held: totals.held, charged: totals.charged,
      max_sparks: batch.max_sparks, created_at: iso(batch.created_at), started_at: iso(batch.started_at), completed_at: iso(batch.completed_at),
      check_again_in_sec: checkAgainInSec(batch.status, totals.counts.running), ...links(batch.id),
    };
  }

  const links = (batchId: string) => ({
    status_url: `${V2_PREFIX}/batches/${batchId}`, items_url: `${V2_PREFIX}/batches/${batchId}/items`, results_url: `${V2_PREFIX}/batches/${batchId}/results.jsonl`,
  });

  function itemView(item: ItemRow, asOf: Date) {
    const signed = item.asset_path ? signer.url(item.asset_path, undefined, asOf) : undefined;
    return {
      external_id: item.external_id, position: item.position, type: item.type, status: item.status, phase: item.phase, job_id: item.job_id,
      error_code: item.error_code, error_message: item.error_message,
      result_url: signed?.url ?? null, result_url_expires_at: signed ? signed.expiresAt.toISOString() : null,
    };
  }

  /** Every item of the batch in order, page by page (a manifest of 10,000 items is never held at once). */
  async function* allItems(batchId: string): AsyncGenerator<ReturnType<typeof itemView>> {
    const asOf = new Date();
    for (let after = 0; ;) {
      const page = await itemsPage(db.manager, batchId, { afterPosition: after, limit: MANIFEST_PAGE });
      for (const item of page) yield itemView(item, asOf);
      if (page.length < MANIFEST_PAGE) return;
      after = page[page.length - 1].position;
    }
  }

  /**
   * Each item checked against its type's schema, then (the valid ones) against what its single request would
   * refuse up front: the items to write, and the invalid ones with every error.
   */
  async function checkedItems(caller: Caller, items: Record<string, unknown>[], lines?: NdjsonLines): Promise<{ rows: NewItem[]; invalid: InvalidItem[] }> {
    const invalid: InvalidItem[] = [];
    const heads: { index: number; external_id: string; type: ItemType; request: Record<string, unknown> }[] = [];
    const seen = new Map<string, number>();
    const where = (index: number) => (lines ? { line: lines.numbers[index] } : {});
    const relative = (issues: ValidationIssue[]) => issues.map((issue) => ({ loc: issue.loc.slice(1), message: issue.msg, code: issue.type }));
    items.forEach((item, index) => {
      const externalId = fieldOf(item, 'external_id');
      const refuse = (errors: InvalidItem['errors']) => invalid.push({ index, ...where(index), external_id: externalId, errors });
      try {
        validateHead(item);
        const { external_id: _id, type, ...request } = item as { external_id: string; type: ItemType };
        const bytes = lines ? lines.bytes[index] : Buffer.byteLength(JSON.stringify(item));
        if (bytes > ITEM_BYTES[type]) {
          refuse([{ code: 'request_too_large', message: `The item is ${bytes} bytes; a ${type} item may be ${ITEM_BYTES[type]}` }]);
          return;
        }
        validateItem[type](request);
        const first = seen.get(externalId!);
        if (first !== undefined) {
          refuse([{ loc: ['external_id'], code: 'duplicate', message: `external_id "${externalId}" is also item ${first}'s` }]);
          return;
        }
        seen.set(externalId!, index);
        heads.push({ index, external_id: externalId!, type, request });
      } catch (err) {
        if (!(err instanceof ValidationFailed)) throw err;
        refuse(relative(err.issues));
      }
    });
    const checked = await checkItems(services, caller, heads);
    const rows: NewItem[] = [];
    heads.forEach((head, i) => {
      const result = checked[i];
      if (result.error) {
        invalid.push({ index: head.index, ...where(head.index), external_id: head.external_id, errors: [result.error] });
      } else {
        rows.push({ position: head.index + 1, external_id: head.external_id, type: head.type, request: result.request, price: result.price, status: 'pending' });
      }
    });
    invalid.sort((a, b) => a.index - b.index);
    return { rows, invalid };
  }

  return [
    {
      method: 'post', path: '/batches', operationId: 'createBatch', tag: 'Batches v2',
      summary: 'Start a batch of photos, cards, videos and edits (JSON, or NDJSON with the batch\'s fields as query parameters)',
      body: createBatchSchema,
      bodyBytes: MAX_BATCH_BODY_BYTES,
      bodyValues: 100 * MAX_NDJSON_ITEMS,
      ndjsonLines: MAX_NDJSON_ITEMS,
      query: createBatchQuery,
      headers: [idempotencyHeader],
      responses: {
        202: { description: 'The batch, queued; nothing is held until each item starts', schema: batchSchema },
        400: { description: '`invalid_request`: broken JSON' },
        404: { description: '`not_found`' },
        409: { description: '`idempotency_conflict`' },
        413: { description: `\`request_too_large\`: over ${MAX_BATCH_BODY_BYTES} bytes` },
        422: { description: '`invalid_items` (`details.items`: each invalid item\'s `index`, NDJSON `line`, `external_id` and `errors`), or the envelope\'s validation errors; an NDJSON body\'s broken lines by line number' },
      },
      async handle(ctx, { body, query }: { body: CreateBatchBody; query: Omit<CreateBatchBody, 'items'> & { partial: boolean } }) {
        const caller = ctx.state.caller as Caller;
        const lines = ctx.state.ndjson as NdjsonLines | undefined;
        const { partial, ...fields } = query;
        const envelope: CreateBatchBody = lines ? { ...fields, items: body.items } : body;
        if (!lines && body.items.length > MAX_JSON_ITEMS) {
          throw new ValidationFailed([{ loc: ['body', 'items'], msg: `must NOT have more than ${MAX_JSON_ITEMS} items (send up to ${MAX_NDJSON_ITEMS} as application/x-ndjson)`, type: 'maxItems' }]);
        }
        if (envelope.webhook_url) await checkWebhookUrl(services.outbound, envelope.webhook_url, 'webhook_url');
        const { claim, done } = await answerRepeat(services, ctx, 'v2:batches', { ...envelope, partial });
        if (done) return;
        const { rows, invalid } = await checkedItems(caller, envelope.items, lines);
        if (invalid.length > 0 && (!partial || rows.length === 0)) {
          throw new AppError(422, 'invalid_items', `${invalid.length} of ${envelope.items.length} items are invalid${partial ? ' (none is valid)' : ''}; nothing was started or held`,
            { items: invalid.slice(0, MAX_REPORTED_ITEMS), invalid: invalid.length });
        }
        const invalidRows: NewItem[] = invalid.map((item) => ({
          position: item.index + 1, external_id: item.external_id, type: typeOf(envelope.items[item.index]),
          request: {}, price: 0, status: 'invalid',
          error_code: item.errors[0].code ?? 'invalid_request', error_message: item.errors.map((e) => `${e.loc?.join('.') ?? ''} ${e.message}`.trim()).join('; '),
        }));
        const batchId = randomUUID();
        const counts = Object.fromEntries(ITEM_STATUSES.map((status) => [status, 0])) as Record<ItemStatus, number>;
        counts.pending = rows.length;
        counts.invalid = invalidRows.length;
        const price = rows.reduce((sum, row) => sum + row.price, 0);
        const response: StoredResponse = {
          status: 202,
          body: {
            batch_id: batchId, status: 'queued', items: envelope.items.length, counts, price, held: 0, charged: 0, max_sparks: envelope.max_sparks ?? null,
            created_at: new Date().toISOString(), started_at: null, completed_at: null, check_again_in_sec: checkAgainInSec('queued'), ...links(batchId),
          },
        };
        const created = await createBatch(db, {
          id: batchId, accountId: caller.accountId, keyId: caller.keyId, maxSparks: envelope.max_sparks ?? null,
          webhookUrl: envelope.webhook_url ?? null, itemEvents: Boolean(envelope.item_events),
          clientGroupId: envelope.client_group_id ?? null, acceptLanguage: ctx.get('Accept-Language') || null,
          sandboxScenario: caller.sandbox?.scenario ?? null, items: [...rows, ...invalidRows].sort((a, b) => a.position - b.position),
        }, claim, response);
        if (!created) {
          const replay = await refusedClaim(db, claim!);
          if (!replay.response.status) throw keyInFlight(); // the first request's batch was forgotten meanwhile: try again
          return send(ctx, replay.response, true);
        }
        try {
          await startBatchWorkflow(temporal, config.taskQueue, { batchId, accountId: caller.accountId, items: envelope.items.length });
        } catch (err) {
          // The start may have reached Temporal although it answered an error: then the batch runs and is answered as
          // accepted. Only a batch whose workflow does not exist is forgotten (nothing of it was held), with its key,
          // so that a retry is a new request; if Temporal cannot even say, the reconciler starts it later.
          const state = await workflowState(temporal, batchWorkflowId(batchId)).catch(() => undefined);
          if (state?.kind !== 'missing') {
            log.warn('a batch\'s workflow start answered an error; the batch stays accepted', { batchId, error: String(err) });
          } else {
            log.error('could not start a batch\'s workflow; the batch is forgotten', { batchId, error: String(err) });
            await forgetBatch(db, batchId, claim);
            throw generationUnavailable();
          }
        }
        send(ctx, response);
      },
    },
    {
      method: 'get', path: '/batches/{batch_id}', operationId: 'getBatch', tag: 'Batches v2',
      summary: 'A batch: status, items per status, price, sparks held and charged, polling hint',
      params: batchIdPath,
      responses: { 200: { description: 'The batch', schema: batchSchema }, 404: { description: '`not_found`: unknown, malformed or another account\'s batch id' } },
      async handle(ctx, { params }) {
        ctx.body = await batchView(await ownBatch(ctx, params.batch_id));
      },
    },
    {
      method: 'get', path: '/batches/{batch_id}/events', operationId: 'streamBatchEvents', tag: 'Batches v2',
      summary: 'Live progress of a batch as Server-Sent Events: the batch (as `GET /batches/{batch_id}` answers it) whenever it changes; the stream ends with the batch',
      params: batchIdPath,
      responses: {
        200: { description: '`event: batch` with the batch as `data`, again on each change; ends after the batch has ended', mediaType: 'text/event-stream', schema: { type: 'string' } },
        404: { description: '`not_found`' },
        429: { description: '`too_many_streams`: the key holds as many live streams as it may in this process' },
      },
      async handle(ctx, { params }) {
        const batch = await ownBatch(ctx, params.batch_id);
        const caller = ctx.state.caller as Caller;
        await streamSnapshots(ctx, {
          event: 'batch',
          // Woken by its items' moves, and every BATCH_STREAM_TICK_MS besides: the batch's own moves (started, ended,
          // cancelled with nothing running) are no action's.
          subscribe: async (subscriber) => {
            const unsubscribe = await liveEvents.subscribeAccountAsKey(caller.accountId, caller.keyId, subscriber);
            const tick = setInterval(() => subscriber.wake(), BATCH_STREAM_TICK_MS);
            return () => {
              clearInterval(tick);
              unsubscribe();
            };
          },
          read: async () => batchView((await readBatch(db.manager, batch.id))!),
          final: (view) => (view as { check_again_in_sec: number | null }).check_again_in_sec === null,
          heartbeatSeconds: liveEvents.limits.heartbeatSeconds,
          maxSeconds: liveEvents.limits.maxSeconds,
          minIntervalMs: BATCH_STREAM_MIN_INTERVAL_MS,
        });
      },
    },
    {
      method: 'get', path: '/batches/{batch_id}/items', operationId: 'listBatchItems', tag: 'Batches v2',
      summary: 'The batch\'s items in order, of one status or all, a page at a time (`after`: the last position seen)',
      params: batchIdPath,
      query: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: [...ITEM_STATUSES] },
          after: { type: 'integer', minimum: 0, maximum: 2147483647, default: 0 },
          limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        },
      },
      responses: {
        200: {
          description: 'A page of items; `next_after` is null on the last page',
          schema: { type: 'object', required: ['items', 'next_after'], properties: { items: { type: 'array', items: itemSchema }, next_after: { type: ['integer', 'null'] } } },
        },
        404: { description: '`not_found`' },
      },
      async handle(ctx, { params, query }) {
        const batch = await ownBatch(ctx, params.batch_id);
        const page = await itemsPage(db.manager, batch.id, { status: query.status, afterPosition: query.after, limit: query.limit + 1 });
        const more = page.length > query.limit;
        const shown = page.slice(0, query.limit);
        const asOf = new Date();
        ctx.body = { items: shown.map((item) => itemView(item, asOf)), next_after: more ? shown[shown.length - 1].position : null };
      },
    },
    {
      method: 'get', path: '/batches/{batch_id}/results.jsonl', operationId: 'getBatchResultsJsonl', tag: 'Batches v2',
      summary: 'The manifest: every item as one JSON line (as `/items` shows it), with fresh result URLs, streamed',
      params: batchIdPath,
      responses: { 200: { description: 'One item per line', mediaType: 'application/x-ndjson', schema: { type: 'string' } }, 404: { description: '`not_found`' } },
      async handle(ctx, { params }) {
        const batch = await ownBatch(ctx, params.batch_id);
        ctx.type = 'application/x-ndjson';
        ctx.body = manifest(ctx, async function* lines() {
          for await (const item of allItems(batch.id)) yield `${JSON.stringify(item)}\n`;
        });
      },
    },
    {
      method: 'get', path: '/batches/{batch_id}/results.csv', operationId: 'getBatchResultsCsv', tag: 'Batches v2',
      summary: 'The manifest as CSV (a header row, then one row per item), with fresh result URLs, streamed',
      params: batchIdPath,
      responses: { 200: { description: `Columns: ${CSV_COLUMNS.join(', ')}`, mediaType: 'text/csv', schema: { type: 'string' } }, 404: { description: '`not_found`' } },
      async handle(ctx, { params }) {
        const batch = await ownBatch(ctx, params.batch_id);
        ctx.type = 'text/csv; charset=utf-8';
        ctx.attachment(`batch-${batch.id}.csv`);
        ctx.body = manifest(ctx, async function* rows() {
          yield stringify([[...CSV_COLUMNS]]);
          for await (const item of allItems(batch.id)) yield stringify([CSV_COLUMNS.map((column) => item[column] ?? '')], { escape_formulas: true });
        });
      },
    },
    {
      method: 'post', path: '/batches/{batch_id}/cancel', operationId: 'cancelBatch', tag: 'Batches v2',
      summary: 'Cancel a batch: items not started are cancelled at once (nothing was held for them); running items are cancelled as single jobs are',
      params: batchIdPath,
      responses: {
        200: {
          description: 'The batch after the cancel; `cancelled` is false when it had already ended',
          schema: { type: 'object', required: ['batch', 'cancelled'], properties: { batch: batchSchema, cancelled: { type: 'boolean' } } },
        },
        404: { description: '`not_found`' },
      },
      async handle(ctx, { params }) {
        const batch = await ownBatch(ctx, params.batch_id);
        const { cancelled, live } = await cancelBatchRecord(db, batch.id);
        for (const job of live) await cancelJob(services, job as Parameters<typeof cancelJob>[1]);
        ctx.body = { batch: await batchView((await readBatch(db.manager, batch.id))!), cancelled };
      },
    },
  ];
}

/** A batch's stream reads it at most this often, however fast its items move. */
const BATCH_STREAM_MIN_INTERVAL_MS = 1_000;
/** A batch's stream reads it at least this often too (its own moves announce nothing). */
const BATCH_STREAM_TICK_MS = 2_000;

/** Items per page of a streamed manifest. */
const MANIFEST_PAGE = 1000;
/** Invalid items a 422 lists at most (`details.invalid` says how many there are). */
const MAX_REPORTED_ITEMS = 1000;

const CSV_COLUMNS = ['position', 'external_id', 'type', 'status', 'phase', 'job_id', 'error_code', 'error_message', 'result_url', 'result_url_expires_at'] as const;

/**
 * A streamed manifest: a failure mid-way cuts the connection, so that the client sees a failed download, not a
 * short file.
 */
function manifest(ctx: Context, lines: () => AsyncGenerator<string>): Readable {
  return Readable.from((async function* guarded() {
    try {
      yield* lines();
    } catch (err) {
      ctx.res.destroy();
      ctx.app.emit('error', err, ctx);
    }
  })());
}
