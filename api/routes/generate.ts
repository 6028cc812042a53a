/**
 * POST /generate/photo, /generate/card and /generate/video: validate, read the images, detect what is missing,
 * price, then submit (one transaction for card, action and hold; then the images are stored and the workflow
 * starts).
 */
import type { Context } from 'koa';
import type { CardParams, VideoParams } from '../../src/actions/params';
import { submitAction } from '../../src/actions/submit';
import { readPriceList } from '../../src/billing/pricing';
import { AppError, unsupportedParameter } from '../../src/errors';
import { inputKeys } from '../../src/generation/images';
import { generationPreparation } from '../../src/generation/prepare';
import { resolveLocale } from '../../src/locale';
import type { Caller } from '../../src/services';
import { detectedView, GENERATION_ERRORS, generationResponse } from '../generation';
import { answerRepeat, idempotencyHeader, send } from '../idempotency';
import type { Route } from '../route';
import { CardRequest, cardRequestSchema, PhotoRequest, photoRequestSchema, VideoRequest, videoRequestSchema } from '../schemas/generate';
import { ref } from '../schemas/shared';
import type { ApiServices } from '../services';

export const MIN_VIDEO_SIDE = 300;

export function generateRoutes(services: ApiServices): Route[] {
  const { db } = services;
  const { readImage, readImages, detect, newCard, preparePhoto } = generationPreparation(services);
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
        const { found, price, params, images } = await preparePhoto(body, caller, ctx.get('Accept-Language'));
        const response = await submitAction(services, {
          caller, type: 'generate', product: 'photo', price, params, inputs: images, idempotency: claim,
          placement: newCard(body, found),
          clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
          respond: (placed) => generationResponse(placed, detectedView(found)),
        });
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
        if (body.style === 'cinematic') {
          if (body.design_key !== undefined) throw unsupportedParameter('design_key is only supported with style infographic');
          if (body.design_reference_image !== undefined) throw unsupportedParameter('design_reference_image is only supported with style infographic');
        }
        const { claim, done } = await replayed(ctx, 'v1:generate/card', body);
        if (done) return;
        const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
        // Read by their headers: the worker decodes them (the analysis too, when it runs).
        const images = await readImages(body.images, 'images', caller, 'header');
        const reference = body.design_reference_image
          ? await readImage(body.design_reference_image, 'design_reference_image', caller.accountId, 'header') : undefined;
        const found = await detect(images, locale, body, body.concept_id, body.user_text === undefined);
        const params: CardParams = {
          inputs: inputKeys(images), designReference: reference && inputKeys([reference])[0],
          productName: found.productName, categoryId: found.categoryId, conceptId: found.conceptId,
          userText: body.user_text ?? found.qualities!.join('\n'), style: body.style,
          designKey: body.style === 'infographic' ? body.design_key : undefined,
          creativity: body.style === 'infographic' ? body.creativity : 0, aspectRatio: body.aspect_ratio, locale,
        };
        const response = await submitAction(services, {
          caller, type: 'generate', product: 'card', price: (await readPriceList(db)).generation, params,
          inputs: reference ? [...images, reference] : images, idempotency: claim,
          placement: newCard(body, found),
          clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
          respond: (placed) => ({ ...generationResponse(placed, detectedView(found)), style: body.style }),
        });
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
        // Read by its header: the worker decodes it. The final frame is decoded here: a provider may not read it
        // (Runway's gen4_turbo is not sent one), and a damaged one must not pass unnoticed.
        const image = await readImage(body.image, 'image', caller.accountId, 'header');
        if (image.width < MIN_VIDEO_SIDE || image.height < MIN_VIDEO_SIDE) {
          throw new AppError(400, 'image_too_small', `image is ${image.width}x${image.height}; a video needs at least ${MIN_VIDEO_SIDE}x${MIN_VIDEO_SIDE}`);
        }
        const final = body.final_frame && !body.loop_mode ? await readImage(body.final_frame, 'final_frame', caller.accountId) : undefined;
        const prices = await readPriceList(db);
        const params: VideoParams = {
          input: inputKeys([image])[0], finalFrame: final && inputKeys([final])[0], scenario: body.scenario,
          durationSec: body.duration_sec, loopMode: body.loop_mode, cardMode: body.card_mode, aspectRatio: body.aspect_ratio,
        };
        const response = await submitAction(services, {
          caller, type: 'video', product: 'video', price: body.duration_sec === 10 ? prices.video_10sec : prices.video_5sec,
          params, inputs: final ? [image, final] : [image], idempotency: claim,
          placement: {
            kind: 'new-card', projectId: body.project_id, aspectRatio: body.aspect_ratio, contentType: 'video',
            hints: { name: null, productName: null, categoryId: null, conceptId: null },
          },
          clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
          respond: (placed) => generationResponse(placed, null),
        });
        send(ctx, response, response.replayed);
      },
    },
  ];
}
