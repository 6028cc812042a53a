/**
 * Try it: a signed-in user starts a photo, a card or a video from the dashboard, attributed to one of the account's
 * active API keys (its grouping, its name on the work), through the same acceptance as the public API
 * (api/generation-requests.ts): the same validation of the request, price, hold, workflow and answer. The request
 * is the public endpoint's body, whole, under `request`.
 */
import { accountKey, accountKeys } from '../../src/accounts/accounts';
import { readBalance } from '../../src/billing/sparks';
import { CATEGORIES } from '../../src/generation/catalogue';
import { AppError } from '../../src/errors';
import type { Caller } from '../../src/services';
import { checkCardRequest, generationRequests } from '../generation-requests';
import { send } from '../idempotency';
import type { Route } from '../route';
import { cardRequestSchema, photoRequestSchema, videoRequestSchema } from '../schemas/generate';
import type { ApiServices } from '../services';
import { dashboardRoute } from './session-guard';

const PRODUCTS = {
  photo: { schema: photoRequestSchema, images: 5 },
  card: { schema: cardRequestSchema, images: 6 },
  video: { schema: videoRequestSchema, images: 2 },
} as const;

export function tryRoutes(services: ApiServices): Route[] {
  const { db } = services;
  const accept = generationRequests(services);

  /** The caller the work is attributed to: an active key of the user's account (else 422 naming `key_id`). */
  async function callerOf(accountId: number, keyId: number): Promise<Caller> {
    const key = await accountKey(db, accountId, keyId);
    if (!key || key.revoked_at) throw new AppError(422, 'invalid_request', 'key_id is not an active key of this account');
    const { available } = await readBalance(db, accountId);
    return { accountId, keyId: key.id, keyName: key.name, defaultGrouping: key.default_grouping, availableOnArrival: available };
  }

  return [
    dashboardRoute({
      method: 'get', path: '/try', operationId: 'tryOptions', access: 'member', summary: 'What Try it offers: the active keys to attribute work to, and the categories',
      responses: { 200: { description: 'Options' } },
      async handle(ctx, { user }) {
        ctx.body = {
          keys: (await accountKeys(db, user.accountId)).filter((k) => !k.revoked_at).map(({ id, name, prefix }) => ({ id, name, prefix })),
          categories: CATEGORIES.map(({ id, name }) => ({ id, name })),
        };
      },
    }),
    ...(Object.entries(PRODUCTS) as [keyof typeof PRODUCTS, (typeof PRODUCTS)[keyof typeof PRODUCTS]][]).map(([product, { schema, images }]) => dashboardRoute({
      method: 'post', path: `/try/${product}`, operationId: `try${product[0].toUpperCase()}${product.slice(1)}`, access: 'member',
      summary: `Start a ${product} as POST /generate/${product} does, attributed to one of the account's keys`,
      body: {
        type: 'object', required: ['key_id', 'request'], additionalProperties: false,
        properties: { key_id: { type: 'integer', minimum: 1, maximum: 2147483647 }, request: schema },
      },
      bodyImages: images,
      responses: { 200: { description: 'Accepted: the answer of POST /generate/' + product } },
      async handle(ctx, { body, user }) {
        if (product === 'card') checkCardRequest(body.request);
        const caller = await callerOf(user.accountId, body.key_id);
        send(ctx, await accept[product](caller, body.request, ctx.get('Accept-Language')));
      },
    })),
  ];
}
