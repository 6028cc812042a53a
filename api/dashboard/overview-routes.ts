/** The dashboard's overview of the account: its sparks (more of it comes with the pages that show it). */
import { readBalance } from '../../src/billing/sparks';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { dashboardRoute } from './session-guard';

export function overviewRoutes({ db }: ApiServices): Route[] {
  return [
    dashboardRoute({
      method: 'get', path: '/overview', operationId: 'overview', access: 'member', summary: 'The account\'s sparks: balance, available, held',
      responses: {
        200: {
          description: 'The overview',
          schema: { type: 'object', required: ['balance', 'available', 'held'], properties: { balance: { type: 'integer' }, available: { type: 'integer' }, held: { type: 'integer' } } },
        },
      },
      async handle(ctx, { user }) {
        const { balance, available, holds } = await readBalance(db, user.accountId);
        ctx.body = { balance, available, held: holds };
      },
    }),
  ];
}
