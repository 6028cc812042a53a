/**
 * POST /generate/photo, /generate/card and /generate/video: validate, answer a repeated Idempotency-Key, then accept
 * (api/generation-requests.ts, which the dashboard's Try it calls too).
 */
import type { Context } from 'koa';
import type { Caller } from '../../src/services';
import { generationRequests } from '../generation-requests';
import { checkCardOrder } from '../../src/generation/prepare';
import { GENERATION_ERRORS } from '../generation';
import { answerRepeat, idempotencyHeader, send } from '../idempotency';
import type { Route } from '../route';
import { CardRequest, cardRequestSchema, PhotoRequest, photoRequestSchema, VideoRequest, videoRequestSchema } from '../schemas/generate';
import { ref } from '../schemas/shared';
import type { ApiServices } from '../services';

export function generateRoutes(services: ApiServices): Route[] {
  const accept = generationRequests(services);
  const replayed = (ctx: Context, scope: string, body: unknown) => answerRepeat(services, ctx, scope, body);
  return [
    {
      method: 'post', path: '/generate/photo', operationId: 'generatePhoto', tag: 'Generation',
      summary: 'Generate a styled product photo from 1-5 reference photos (asynchronous)',
      body: photoRequestSchema,
      bodyImages: 5,
      headers: [idempotencyHeader],
      responses: { 200: { description: 'Accepted; the action is pending and its price is held', schema: ref('GenerationResponse') }, ...GENERATION_ERRORS },
      async handle(ctx, { body }: { body: PhotoRequest }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await replayed(ctx, 'v1:generate/photo', body);
        if (done) return;
        const response = await accept.photo(caller, body, ctx.get('Accept-Language'), claim);
        send(ctx, response, response.replayed);
      },
    },
    {
      method: 'post', path: '/generate/card', operationId: 'generateCard', tag: 'Generation',
      summary: 'Generate a marketing card (infographic or cinematic) from 1-5 reference photos (asynchronous)',
      body: cardRequestSchema,
      bodyImages: 6, // images and design_reference_image
      headers: [idempotencyHeader],
      responses: {
        200: {
          description: 'Accepted; the action is pending and its price is held',
          schema: { allOf: [ref('GenerationResponse'), { type: 'object', required: ['style'], properties: { style: { type: 'string', enum: ['infographic', 'cinematic'] } } }] },
        },
        ...GENERATION_ERRORS,
        400: { description: `${GENERATION_ERRORS[400].description}; \`unsupported_parameter\`: design_key or design_reference_image with style cinematic` },
      },
      async handle(ctx, { body }: { body: CardRequest }) {
        const caller = ctx.state.caller as Caller;
        checkCardOrder(body);
        const { claim, done } = await replayed(ctx, 'v1:generate/card', body);
        if (done) return;
        const response = await accept.card(caller, body, ctx.get('Accept-Language'), claim);
        send(ctx, response, response.replayed);
      },
    },
    {
      method: 'post', path: '/generate/video', operationId: 'generateVideo', tag: 'Generation',
      summary: 'Generate a 5 or 10 second product video from one image (asynchronous)',
      body: videoRequestSchema,
      bodyImages: 2, // image and final_frame
      headers: [idempotencyHeader],
      responses: {
        200: { description: 'Accepted; the action is pending and its price is held', schema: ref('GenerationResponse') },
        ...GENERATION_ERRORS,
        400: { description: `${GENERATION_ERRORS[400].description}; \`image_too_small\`: the image is under 300x300 (nothing is charged)` },
      },
      async handle(ctx, { body }: { body: VideoRequest }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await replayed(ctx, 'v1:generate/video', body);
        if (done) return;
        const response = await accept.video(caller, body, ctx.get('Accept-Language'), claim);
        send(ctx, response, response.replayed);
      },
    },
  ];
}
