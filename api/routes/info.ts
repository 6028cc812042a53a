import { CATEGORIES } from '../../src/generation/catalogue';
import { readBalance } from '../../src/billing/sparks';
import { readPriceList } from '../../src/billing/pricing';
import type { Route } from '../route';
import { ref } from '../schemas/shared';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';

const CATALOGUE_BODY = { categories: CATEGORIES };

export function infoRoutes({ db }: ApiServices): Route[] {
  return [
    {
      method: 'get', path: '/balance', operationId: 'getBalance', tag: 'Information', summary: 'Sparks balance, holds and what is available',
      responses: { 200: { description: 'The balance', schema: ref('Balance') } },
      async handle(ctx) {
        ctx.body = await readBalance(db, (ctx.state.caller as Caller).accountId);
      },
    },
    {
      method: 'get', path: '/pricing', operationId: 'getPricing', tag: 'Information', summary: 'Current prices in sparks',
      responses: { 200: { description: 'The price list', schema: ref('Pricing') } },
      async handle(ctx) {
        ctx.body = await readPriceList(db, { fresh: true }); // a change answers at once; generations price with it within PRICE_LIST_TTL_MS
      },
    },
    {
      method: 'get', path: '/categories', operationId: 'getCategories', tag: 'Information', summary: 'The fixed category and concept catalogue',
      responses: {
        200: {
          description: 'The catalogue (cacheable for 24 hours)',
          schema: ref('CategoryCatalogue'),
          headers: { 'Cache-Control': { description: 'public, max-age=86400', schema: { type: 'string' } } },
        },
      },
      async handle(ctx) {
        ctx.set('Cache-Control', 'public, max-age=86400');
        ctx.body = CATALOGUE_BODY;
      },
    },
  ];
}
