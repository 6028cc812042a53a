/**
 * The account's catalogue batches in the dashboard, newest first, a page at a time: each with its status, items per
 * status and money; the gallery shows one batch's items (`/gallery?batch_id=`).
 */
import { batchesPage, batchTotals, ITEM_STATUSES } from '../../src/batches/store';
import { cursorParts, encodeCursor, isPositionTime } from '../../src/db/keyset';
import type { Route } from '../route';
import { UUID } from '../route';
import type { ApiServices } from '../services';
import { iso } from '../representations';
import { pageAnswer, pageQuery, resumeAt } from './paging';
import { dashboardRoute } from './session-guard';

const batchItem = {
  type: 'object', required: ['batch_id', 'status', 'items', 'counts', 'price', 'held', 'charged', 'max_sparks', 'created_at', 'completed_at'],
  properties: {
    batch_id: { type: 'string' }, status: { type: 'string' }, items: { type: 'integer' },
    counts: { type: 'object', properties: Object.fromEntries(ITEM_STATUSES.map((status) => [status, { type: 'integer' }])) },
    price: { type: 'integer' }, held: { type: 'integer' }, charged: { type: 'integer' }, max_sparks: { type: ['integer', 'null'] },
    created_at: { type: 'string', format: 'date-time' }, completed_at: { type: ['string', 'null'], format: 'date-time' },
  },
};

/** A batch list cursor: the last row's creation (to the microsecond, in UTC) and id. */
function decodeBatchCursor(cursor: string): { at: string; id: string } | undefined {
  const [at, id] = cursorParts(cursor) ?? [];
  return isPositionTime(at) && typeof id === 'string' && UUID.test(id) ? { at, id } : undefined;
}

export function batchDashboardRoutes({ db }: ApiServices): Route[] {
  return [
    dashboardRoute({
      method: 'get', path: '/batches', operationId: 'listBatches', access: 'member', summary: 'The account\'s batches, newest first, a page at a time',
      query: pageQuery(20, 100),
      responses: { 200: pageAnswer('A page of batches and the cursor of the next (null at the end)', 'batches', batchItem) },
      async handle(ctx, { query, user }) {
        const rows = await batchesPage(db, user.accountId, resumeAt(query.cursor, decodeBatchCursor), query.limit + 1);
        const page = rows.slice(0, query.limit);
        const last = page[page.length - 1];
        const batches = [];
        for (const b of page) { // one after the other: each counts up to 10,000 items
          const totals = await batchTotals(db.manager, b.id);
          batches.push({
            batch_id: b.id, status: b.status, items: b.items, counts: totals.counts, price: b.price, held: totals.held, charged: totals.charged,
            max_sparks: b.max_sparks, created_at: iso(b.created_at), completed_at: iso(b.completed_at),
          });
        }
        ctx.body = {
          batches,
          next_cursor: rows.length > query.limit && last ? encodeCursor([last.position, last.id]) : null,
        };
      },
    }),
  ];
}
