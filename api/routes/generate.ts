/**
 * POST /generate/photo, /generate/card and /generate/video: validate, read the images, detect what is missing,
 * price, then submit (one transaction for card, action and hold; then the images are stored and the workflow
 * starts).
 */
import type { Context } from 'koa';
import type { CardParams, PhotoParams, VideoParams } from '../../src/domain/action-params';
import { categoryOfConcept, findCategory } from '../../src/domain/catalogue';
import { photoPrice, readPriceList } from '../../src/domain/pricing';
import { answerRepeat, Placement, requireProvider, send, submitAction, V1_PREFIX } from '../actions/submit';
import { analyzeProduct } from '../ask-text-provider';
import { AppError, badRequest, unsupportedParameter } from '../errors';
import { idempotencyHeader } from '../idempotency';
import { CheckedImage, ImageInput, imageReader, inputKeys } from '../images';
import { Locale, resolveLocale } from '../locale';
import type { Route, RouteResponse } from '../route';
import { CardRequest, cardRequestSchema, PhotoRequest, photoRequestSchema, VideoRequest, videoRequestSchema } from '../schemas/generate';
import { ref } from '../schemas/shared';
import type { ApiServices, Caller } from '../services';

export { V1_PREFIX };

export const MIN_VIDEO_SIDE = 300;

export const ERRORS: Record<number, RouteResponse> = {
  400: { description: '`invalid_request`: an image cannot be read or fetched, or concept_id does not belong to category_id; `upload_not_found`, `upload_expired`' },
  402: { description: '`insufficient_tokens`; details: available, required' },
  403: { description: '`forbidden`: project_id belongs to another account' },
  404: { description: '`not_found`: project_id does not exist' },
  409: { description: '`idempotency_conflict`: the Idempotency-Key was used with a different request in the last 5 minutes' },
  413: { description: '`image_too_large`: an image is over 15 MB decoded or over 50 megapixels (25 for HEIC) or 20,000 pixels a side' },
  500: { description: '`analysis_failed` (photos and cards): category_id or product_name was left out and the analysis that fills it failed; nothing was held' },
  503: { description: '`generation_unavailable`: the images could not be stored or the workflow could not be started; nothing was held' },
};

interface Detected { categoryId: string; conceptId: string; productName: string; qualities?: string[]; detected: boolean }

/** The pieces every generation endpoint (v1 and v2) is made of. */
export function generationKit(services: ApiServices) {
  const { db, providers } = services;
  const readImage = imageReader(services);

  async function readImages(inputs: ImageInput[], field: string, caller: Caller): Promise<CheckedImage[]> {
    const images: CheckedImage[] = [];
    for (const [index, input] of inputs.entries()) images.push(await readImage(input, `${field}[${index}]`, caller.accountId));
    return images;
  }

  /**
   * Fills category, concept and product name: sent values win, a sent catalogue concept implies its category,
   * the rest is detected from the photos. `needQualities` asks for the detected qualities too.
   */
  async function detect(
    images: CheckedImage[], locale: Locale,
    sent: { category_id?: string; concept_id?: string; product_name?: string }, defaultConcept: string | undefined, needQualities = false,
  ): Promise<Detected> {
    let categoryId = sent.category_id ?? (sent.concept_id ? categoryOfConcept(sent.concept_id)?.id : undefined);
    let productName = sent.product_name;
    let qualities: string[] | undefined;
    let detected = false;
    if (!categoryId || !productName || needQualities) {
      requireProvider(services, 'text');
      const analysis = await analyzeProduct(providers, images.map((i) => i.bytes), locale);
      qualities = analysis.qualities;
      if (!categoryId) [categoryId, detected] = [analysis.category_id, true];
      if (!productName) [productName, detected] = [analysis.product_name, true];
    }
    const category = findCategory(categoryId)!;
    let conceptId = sent.concept_id;
    if (!conceptId) {
      conceptId = defaultConcept ?? category.concepts[0].id;
      if (!defaultConcept) detected = true;
    } else if (categoryOfConcept(conceptId) && !category.concepts.some((c) => c.id === conceptId)) {
      throw badRequest(`concept_id "${conceptId}" does not belong to category "${categoryId}"`);
    }
    return { categoryId, conceptId, productName, qualities, detected };
  }

  const detectedView = (d: Detected) =>
    d.detected ? { category_id: d.categoryId, concept_id: d.conceptId, product_name: d.productName } : null;

  const replayed = (ctx: Context, scope: string, body: unknown) => answerRepeat(services, ctx, scope, body);

  /** A new card grouped by project_id or the key's default, its project named after the product. */
  const newCard = (body: { project_id?: number; aspect_ratio: string }, found: Detected, ownProject?: 'api_v2'): Placement => ({
    kind: 'new-card', projectId: body.project_id, aspectRatio: body.aspect_ratio, contentType: 'photo', ownProject,
    hints: { name: found.productName, productName: found.productName, categoryId: found.categoryId, conceptId: found.conceptId },
  });

  const generationResponse = (placed: { actionId: number; projectId: number; cardId: number }, detected: object | null) => ({
    action_id: placed.actionId,
    status: 'pending' as const,
    poll_url: `${V1_PREFIX}/status/${placed.actionId}`,
    project_id: placed.projectId,
    card_id: placed.cardId,
    detected,
  });

  /** A photo request made ready to submit: images read (submitAction stores them), fields detected, price and params set. */
  async function preparePhoto(ctx: Context, body: PhotoRequest, caller: Caller) {
    const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
    const images = await readImages(body.images, 'images', caller);
    const found = await detect(images, locale, body, undefined);
    const price = photoPrice(await readPriceList(db), body.resolution);
    const params: PhotoParams = {
      inputs: inputKeys(images), productName: found.productName, categoryId: found.categoryId,
      conceptId: found.conceptId, locale, photoStyle: body.photo_style, aspectRatio: body.aspect_ratio,
      resolution: body.resolution, comment: body.comment,
    };
    return { found, price, params, images };
  }

  return { readImage, readImages, detect, detectedView, replayed, newCard, generationResponse, preparePhoto };
}

export function generateRoutes(services: ApiServices): Route[] {
  const { db } = services;
  const { readImage, readImages, detect, detectedView, replayed, newCard, generationResponse, preparePhoto } = generationKit(services);
  return [
    {
      method: 'post', path: '/generate/photo', operationId: 'generatePhoto', tag: 'Generation',
      summary: 'Generate a styled product photo from 1-5 reference photos (asynchronous)',
      body: photoRequestSchema,
      bodyImages: 5,
      headers: [idempotencyHeader],
      responses: { 200: { description: 'Accepted; the action is pending and its price is held', schema: ref('GenerationResponse') }, ...ERRORS },
      async handle(ctx, { body }: { body: PhotoRequest }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await replayed(ctx, 'v1:generate/photo', body);
        if (done) return;
        const { found, price, params, images } = await preparePhoto(ctx, body, caller);
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
        ...ERRORS,
        400: { description: `${ERRORS[400].description}; \`unsupported_parameter\`: design_key or design_reference_image with style cinematic` },
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
        const images = await readImages(body.images, 'images', caller);
        const reference = body.design_reference_image ? await readImage(body.design_reference_image, 'design_reference_image', caller.accountId) : undefined;
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
        ...ERRORS,
        400: { description: `${ERRORS[400].description}; \`image_too_small\`: the image is under 300x300 (nothing is charged)` },
      },
      async handle(ctx, { body }: { body: VideoRequest }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await replayed(ctx, 'v1:generate/video', body);
        if (done) return;
        const image = await readImage(body.image, 'image', caller.accountId);
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
