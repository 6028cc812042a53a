/**
 * The account's billing ledger in the dashboard: grants, holds, charges and releases, newest first, each with its
 * action; paged by an opaque cursor, and the whole of it as CSV (streamed a thousand entries at a time, one export per
 * user at a time; a cell that a spreadsheet would read as a formula is escaped).
 */
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import { decodeLedgerCursor, encodeLedgerCursor, type LedgerEntry, ledgerPage } from '../../src/billing/ledger';
import { AppError } from '../../src/errors';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { iso } from '../representations';
import { pageAnswer, pageQuery, resumeAt } from './paging';
import { dashboardRoute } from './session-guard';

const CSV_PAGE = 1_000;
const CSV_COLUMNS = ['at', 'kind', 'amount', 'action_id', 'reference'];

const entrySchema = {
  type: 'object', required: ['at', 'kind', 'amount', 'action_id', 'reference'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    kind: { type: 'string', enum: ['grant', 'charge', 'hold', 'release'] },
    amount: { type: 'integer', description: 'Sparks: a grant adds to the balance, a charge takes from it; a hold takes from what is available, a release gives it back' },
    action_id: { type: ['integer', 'null'] },
    reference: { type: ['string', 'null'], description: 'What an entry without an action is for (a grant, a block of helper calls)' },
  },
};

const entryView = (e: LedgerEntry) => ({ ...e, at: iso(e.at) });

export function billingRoutes({ db }: ApiServices): Route[] {
  /** The users whose export this process is sending: one at a time each. */
  const exporting = new Set<number>();
  return [
    dashboardRoute({
      method: 'get', path: '/ledger', operationId: 'ledger', access: 'member', summary: 'The account\'s money moves, newest first, a page at a time',
      query: pageQuery(50, 200),
      responses: { 200: pageAnswer('A page of entries and the cursor of the next (null at the end)', 'entries', entrySchema) },
      async handle(ctx, { query, user }) {
        const { entries, next } = await ledgerPage(db, user.accountId, resumeAt(query.cursor, decodeLedgerCursor), query.limit);
        ctx.body = { entries: entries.map(entryView), next_cursor: next && encodeLedgerCursor(next) };
      },
    }),
    dashboardRoute({
      method: 'get', path: '/ledger.csv', operationId: 'ledgerCsv', access: 'member', summary: 'The whole ledger as CSV, newest first',
      responses: {
        200: { description: 'The ledger', mediaType: 'text/csv', schema: { type: 'string' } },
        429: { description: '`export_in_progress`: one export per user at a time' },
      },
      async handle(ctx, { user }) {
        if (exporting.has(user.userId)) {
          throw new AppError(429, 'export_in_progress', 'An export of yours is still being sent; wait for it to finish', undefined, { 'Retry-After': '5' });
        }
        exporting.add(user.userId);
        async function* rows() {
          try {
            yield stringify([CSV_COLUMNS]);
            let after;
            do {
              const page = await ledgerPage(db, user.accountId, after, CSV_PAGE);
              yield stringify(page.entries.map((e) => [iso(e.at), e.kind, e.amount, e.action_id ?? '', e.reference ?? '']), { escape_formulas: true });
              after = page.next ?? undefined;
            } while (after);
          } catch (err) {
            // Mid-download: the connection is cut, so that the browser shows a failed download, not a short file.
            ctx.res.destroy();
            ctx.app.emit('error', err, ctx);
          } finally {
            exporting.delete(user.userId);
          }
        }
        const body = Readable.from(rows());
        body.once('close', () => exporting.delete(user.userId)); // also when the reader left before the end
        ctx.type = 'text/csv; charset=utf-8';
        ctx.attachment(`ledger-account-${user.accountId}.csv`);
        ctx.body = body;
      },
    }),
  ];
}
