/**
 * Try it: a signed-in user starts a photo, a card or a video from the dashboard, attributed to one of the account's
 * active API keys (its grouping, its name on the work), through the same acceptance as the public API
 * (api/generation-requests.ts): the same validation of the request, price, hold, workflow and answer. The request
 * is the public endpoint's body, whole, under `request`. Each start counts as a request of the key: in its rate limit
 * (429 past it, with the same headers) and its "last used".
 */
import type { Context } from 'koa';
import { accountKeys, countKeyUse } from '../../src/accounts/accounts';
import { RATE_LIMIT_WINDOW_SECONDS } from '../../src/housekeeping/retention';
import { CATEGORIES } from '../../src/generation/catalogue';
import { AppError } from '../../src/errors';
import type { Caller } from '../../src/services';
import { generationRequests } from '../generation-requests';
import { checkCardOrder } from '../../src/generation/prepare';
import { send } from '../idempotency';
import type { Route } from '../route';
import { cardRequestSchema, photoRequestSchema, videoRequestSchema } from '../schemas/generate';
import type { ApiServices } from '../services';
import { answerRateLimit } from '../middleware/rate-limit';
import { dashboardRoute, hidingOtherAccounts } from './session-guard';

const PRODUCTS = {
  photo: { schema: photoRequestSchema, images: 5 },
  card: { schema: cardRequestSchema, images: 6 },
  video: { schema: videoRequestSchema, images: 2 },
} as const;

export function tryRoutes(services: ApiServices): Route[] {
  const { db, config } = services;
  const accept = generationRequests(services);

  /**
   * The caller the work is attributed to: an active key of the user's account (else 422 naming `key_id`), its use
   * counted in its rate-limit window as the public API counts it (429 past the limit, before anything is read).
   */
  async function callerOf(ctx: Context, accountId: number, keyId: number): Promise<Caller> {
    const key = await countKeyUse(db, accountId, keyId, RATE_LIMIT_WINDOW_SECONDS);
    if (!key) throw new AppError(422, 'invalid_request', 'key_id is not an active key of this account');
    answerRateLimit(ctx, db, config.rateLimitPerMinute, key.id, { window: key.window, used: key.count, nowSeconds: key.now_seconds });
    return { accountId, keyId: key.id, keyName: key.name, defaultGrouping: key.default_grouping, availableOnArrival: key.available };
  }

  return [
    dashboardRoute({
      method: 'get', path: '/try', operationId: 'tryOptions', access: 'member', summary: 'What Try it offers: the active keys to attribute work to, and the categories',
      responses: { 200: { description: 'Options' } },
      async handle(ctx, { user }) {
        ctx.body = {
          keys: (await accountKeys(db, user.accountId)).filter((k) => !k.revoked_at && !k.sandbox).map(({ id, name, prefix }) => ({ id, name, prefix })),
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
        if (product === 'card') checkCardOrder(body.request);
        const caller = await callerOf(ctx, user.accountId, body.key_id);
        // A project of another account is a 404 here, as every other account's id in the dashboard.
        send(ctx, await hidingOtherAccounts(accept[product](caller, body.request, ctx.get('Accept-Language')), `Project ${body.request.project_id}`));
      },
    })),
  ];
}
