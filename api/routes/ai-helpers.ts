/**
 * The AI helpers (synchronous): POST /wishes/suggest, POST /video/suggest-scenario, GET /helpers/usage. Each call
 * is reserved (counted as in flight, and a new paid block's spark held) before the provider writes, and finished
 * after it, each in its own short transaction (src/helper-usage/usage.ts): a failed call is neither counted nor
 * charged, and no lock is held while the provider works.
 */
import { categoryOfConcept } from '../../src/generation/catalogue';
import {
  cancelHelperCall, completeHelperCall, FREE_HELPER_CALLS, HelperCallUnpaid, readHelperUsage, reserveHelperCall,
} from '../../src/helper-usage/usage';
import { log } from '../../src/log';
import { askTextProvider } from '../../src/generation/ask-text-provider';
import { AppError, badRequest, generationUnavailable } from '../../src/errors';
import { resolveLocale } from '../../src/locale';
import type { Route, RouteResponse } from '../route';
import {
  helperUsageSchema, ScenarioRequest, scenarioRequestSchema, WishesRequest, wishesRequestSchema,
} from '../schemas/helpers';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { generationPreparation } from '../../src/generation/prepare';
import { textFor } from '../../src/providers';

/** The longest answers, so that they fit where they are meant to go (a card's user_text, a video's scenario). */
export const MAX_WISHES_CHARS = 5000;
export const MAX_SCENARIO_CHARS = 1500;

const FAILED = 'text_generation_failed';

const ERRORS: Record<number, RouteResponse> = {
  400: { description: '`invalid_request`: an image cannot be read, or concept_id does not belong to category_id; `upload_not_found`, `upload_expired`' },
  402: { description: '`insufficient_tokens`: the free calls of today are used and the balance cannot pay the next block of 20; details: used_today, free_limit. Or `spend_limit_exceeded`: the next block would pass the API key\'s monthly spend limit; details: limit, spent, required' },
  413: { description: '`image_too_large`: an image is over 15 MB decoded or over 50 megapixels (25 for HEIC) or 20,000 pixels a side' },
  500: { description: '`text_generation_failed`: the text provider failed or answered nothing; the call is neither counted nor charged' },
  503: { description: '`generation_unavailable`: the text provider is not configured' },
};

/** An answer cut to `max` characters, at a word boundary where there is one. */
function clipped(text: string, max: number): string {
  const trimmed = text.trim();
  if (trimmed.length <= max) return trimmed;
  const cut = trimmed.slice(0, max);
  const space = cut.search(/\s\S*$/);
  return (space > max / 2 ? cut.slice(0, space) : cut).trimEnd();
}

export function helperRoutes(services: ApiServices): Route[] {
  const { db, providers } = services;
  const { readImage, readImages } = generationPreparation(services);

  function requireTextProvider(caller: Caller): void {
    if (caller.sandbox) return; // the sandbox renderer answers test keys
    const reason = providers.unavailable.text;
    if (reason) throw generationUnavailable(`The AI helpers are unavailable: the text provider is not configured (${reason})`);
  }

  /** One counted call: reserved (402 if it cannot be paid), asked, then counted, or forgotten if it failed. */
  async function countedCall(caller: Caller, ask: (signal: AbortSignal) => Promise<string>, max: number): Promise<string> {
    const reservation = await reserveHelperCall(db, caller.accountId, caller.keyId).catch((err) => {
      if (!(err instanceof HelperCallUnpaid)) throw err;
      throw new AppError(402, 'insufficient_tokens',
        `The ${FREE_HELPER_CALLS} free helper calls of today are used, and the next block of calls costs 1 spark, which the balance does not cover`,
        { used_today: err.usedToday, free_limit: FREE_HELPER_CALLS });
    });
    let answer: string;
    try {
      answer = clipped(await askTextProvider(FAILED, ask), max);
      if (!answer) throw new AppError(500, FAILED, 'The text provider answered no text');
    } catch (err) {
      // If even this fails, the reservation expires and is cancelled the same way (app/main.ts).
      await cancelHelperCall(db, reservation).catch((undo) => log.error('could not cancel a failed helper call; it will expire', { error: String(undo) }));
      throw err;
    }
    if (!(await completeHelperCall(db, reservation))) log.warn('a helper call finished after its reservation expired; it was not counted', { accountId: caller.accountId });
    return answer;
  }


  return [
    {
      method: 'post', path: '/wishes/suggest', operationId: 'suggestWishes', tag: 'AI helpers',
      summary: 'Write marketing text for a card from 1-5 product photos and the chosen concept (synchronous, counted)',
      body: wishesRequestSchema,
      bodyImages: 5,
      responses: {
        200: {
          description: 'The text (at most 5000 characters, so it fits a card\'s user_text)',
          schema: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: MAX_WISHES_CHARS } } },
        },
        ...ERRORS,
      },
      async handle(ctx, { body }: { body: WishesRequest }) {
        const caller = ctx.state.caller as Caller;
        requireTextProvider(caller);
        const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
        const conceptCategory = categoryOfConcept(body.concept_id);
        if (conceptCategory && conceptCategory.id !== body.category_id) {
          throw badRequest(`concept_id "${body.concept_id}" does not belong to category "${body.category_id}"`);
        }
        const images = await readImages(body.images, 'images', caller);
        const text = await countedCall(caller, (signal) => textFor(providers, caller).suggestWishes({
          images: images.map((i) => i.bytes), categoryId: body.category_id, conceptId: body.concept_id, productName: body.product_name, locale,
        }, signal), MAX_WISHES_CHARS);
        ctx.body = { text };
      },
    },
    {
      method: 'post', path: '/video/suggest-scenario', operationId: 'suggestVideoScenario', tag: 'AI helpers',
      summary: 'Write a video scenario for one product photo (synchronous, counted)',
      body: scenarioRequestSchema,
      bodyImages: 1,
      responses: {
        200: {
          description: 'The scenario (at most 1500 characters, so it fits a video\'s scenario)',
          schema: { type: 'object', required: ['scenario'], properties: { scenario: { type: 'string', maxLength: MAX_SCENARIO_CHARS } } },
        },
        ...ERRORS,
        400: { description: '`invalid_request`: the image cannot be read; `upload_not_found`, `upload_expired`' },
      },
      async handle(ctx, { body }: { body: ScenarioRequest }) {
        const caller = ctx.state.caller as Caller;
        requireTextProvider(caller);
        const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
        const image = await readImage(body.image, 'image', caller.accountId);
        const scenario = await countedCall(caller, (signal) => textFor(providers, caller).suggestScenario({
          image: image.bytes, productName: body.product_name, categoryId: body.category_id, locale,
        }, signal), MAX_SCENARIO_CHARS);
        ctx.body = { scenario };
      },
    },
    {
      method: 'get', path: '/helpers/usage', operationId: 'getHelperUsage', tag: 'AI helpers',
      summary: 'Today\'s (UTC) helper calls, the free limit and the paid rate',
      responses: { 200: { description: 'The usage', schema: helperUsageSchema } },
      async handle(ctx) {
        ctx.body = await readHelperUsage(db.manager, (ctx.state.caller as Caller).accountId);
      },
    },
  ];
}
