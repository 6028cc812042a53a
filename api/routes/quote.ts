/**
 * POST /quote: what a generation, video or edit would cost now, and whether it would be accepted now (the account's
 * available sparks and the key's monthly spend limit), holding nothing. The body is that request's body with its
 * `type`; its images may be left out (they do not change the price) and are not read when given.
 */
import { readBalance, readKeySpend } from '../../src/billing/sparks';
import { priceOf, readPriceList } from '../../src/billing/pricing';
import type { Caller } from '../../src/services';
import type { JsonSchema, Route } from '../route';
import { cardRequestSchema, editRequestSchema, photoRequestSchema, videoRequestSchema } from '../schemas/generate';
import { compileValidator } from '../validation';
import type { ApiServices } from '../services';

const QUOTE_TYPES = ['photo', 'card', 'video', 'edit'] as const;
type QuoteType = (typeof QUOTE_TYPES)[number];

/** A request body as a quote takes it: nothing required (images, instruction), every given field checked as the request checks it. */
const optional = (schema: { properties: object }, extra: object = {}): JsonSchema =>
  ({ ...schema, required: ['type'], properties: { ...schema.properties, ...extra, type: { type: 'string', enum: [...QUOTE_TYPES] } } });

const BODIES: Record<QuoteType, (body: unknown) => unknown> = {
  photo: compileValidator('body', optional(photoRequestSchema)),
  card: compileValidator('body', optional(cardRequestSchema)),
  video: compileValidator('body', optional(videoRequestSchema)),
  edit: compileValidator('body', optional(editRequestSchema, { action_id: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'The action to edit (not read: every edit costs the same)' } })),
};

const quoteSchema = {
  type: 'object',
  required: ['type'],
  description: 'The body of the request to price, with its `type`: `photo` (POST /generate/photo), `card` (/generate/card), '
    + '`video` (/generate/video) or `edit` (/edit/{action_id}: `instruction`, and `action_id` in the body). Every field is '
    + 'checked as that request checks it, and none is required: images may be left out (they do not change the price).',
  properties: { type: { type: 'string', enum: [...QUOTE_TYPES] } },
} as const;

export function quoteRoutes({ db }: ApiServices): Route[] {
  return [
    {
      method: 'post', path: '/quote', operationId: 'quote', tag: 'Information',
      summary: 'The exact price of a request, the sparks available, and whether it would be accepted now; nothing is held',
      body: quoteSchema,
      bodyImages: 6,
      responses: {
        200: {
          description: '`affordable`: the price is within the available sparks and within the key\'s monthly spend limit (if it has one), '
            + 'so the money would not refuse it now; the request\'s other checks (an edit\'s source, a card\'s combination) are made when it is sent',
          schema: {
            type: 'object', required: ['type', 'price', 'available', 'affordable'],
            properties: {
              type: { type: 'string', enum: [...QUOTE_TYPES] },
              price: { type: 'integer', description: 'Sparks the request would hold now (and charge if it succeeds)' },
              available: { type: 'integer', description: 'The account\'s available sparks (balance minus holds)' },
              affordable: { type: 'boolean' },
            },
          },
        },
      },
      async handle(ctx, { body }: { body: { type: QuoteType } }) {
        const caller = ctx.state.caller as Caller;
        const request = BODIES[body.type](body) as { resolution: string; duration_sec: number }; // their defaults filled in
        const [prices, balance, spend] = await Promise.all([readPriceList(db), readBalance(db, caller.accountId), readKeySpend(db, caller.keyId)]);
        const price = priceOf(prices, body.type === 'photo' ? { product: 'photo', resolution: request.resolution }
          : body.type === 'video' ? { product: 'video', durationSec: request.duration_sec } : { product: body.type });
        const withinLimit = spend.limit === null || spend.spent + price <= spend.limit;
        ctx.body = { type: body.type, price, available: balance.available, affordable: price <= balance.available && withinLimit };
      },
    },
  ];
}
