/**
 * What accepting a v1 generation does once its body is valid, for the public routes (api/routes/generate.ts) and the
 * dashboard's Try it alike: read the images (by their headers; the worker decodes them), fill in what is missing,
 * price, then submit (one transaction for card, action and hold; then the images are stored and the workflow
 * starts). The caller is whoever the request is attributed to (an API key of the account).
 */
import type { CardParams, VideoParams } from '../src/actions/params';
import { submitAction } from '../src/actions/submit';
import { priceOf, readPriceList } from '../src/billing/pricing';
import { AppError, unsupportedParameter } from '../src/errors';
import type { IdempotencyClaim } from '../src/idempotency/keys';
import { inputKeys } from '../src/generation/images';
import { generationPreparation } from '../src/generation/prepare';
import { resolveLocale } from '../src/locale';
import type { Caller, Services } from '../src/services';
import { detectedView, generationResponse } from './generation';
import type { CardRequest, PhotoRequest, VideoRequest } from './schemas/generate';

export const MIN_VIDEO_SIDE = 300;

/** What a card request may not combine (400 `unsupported_parameter`), checked before anything else. */
export function checkCardRequest(body: CardRequest): void {
  if (body.style === 'cinematic') {
    if (body.design_key !== undefined) throw unsupportedParameter('design_key is only supported with style infographic');
    if (body.design_reference_image !== undefined) throw unsupportedParameter('design_reference_image is only supported with style infographic');
  }
}

export function generationRequests(services: Services) {
  const { db } = services;
  const { readImage, readImages, detect, newCard, preparePhoto } = generationPreparation(services);
  return {
    async photo(caller: Caller, body: PhotoRequest, acceptLanguage: string, claim?: IdempotencyClaim) {
      const { found, price, params, images } = await preparePhoto(body, caller, acceptLanguage);
      return submitAction(services, {
        caller, type: 'generate', product: 'photo', price, params, inputs: images, idempotency: claim,
        placement: newCard(body, found),
        clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
        respond: (placed) => generationResponse(placed, detectedView(found)),
      });
    },

    async card(caller: Caller, body: CardRequest, acceptLanguage: string, claim?: IdempotencyClaim) {
      const locale = resolveLocale(body.locale, acceptLanguage);
      // Read by their headers: the worker decodes them (the analysis too, when it runs).
      const images = await readImages(body.images, 'images', caller, 'header');
      const reference = body.design_reference_image
        ? await readImage(body.design_reference_image, 'design_reference_image', caller.accountId, 'header') : undefined;
      const found = await detect(caller, images, locale, body, body.concept_id, body.user_text === undefined);
      const params: CardParams = {
        inputs: inputKeys(images), designReference: reference && inputKeys([reference])[0],
        productName: found.productName, categoryId: found.categoryId, conceptId: found.conceptId,
        userText: body.user_text ?? found.qualities!.join('\n'), style: body.style,
        designKey: body.style === 'infographic' ? body.design_key : undefined,
        creativity: body.style === 'infographic' ? body.creativity : 0, aspectRatio: body.aspect_ratio, locale,
      };
      return submitAction(services, {
        caller, type: 'generate', product: 'card', price: priceOf(await readPriceList(db), { product: 'card' }), params,
        inputs: reference ? [...images, reference] : images, idempotency: claim,
        placement: newCard(body, found),
        clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
        respond: (placed) => ({ ...generationResponse(placed, detectedView(found)), style: body.style }),
      });
    },

    async video(caller: Caller, body: VideoRequest, _acceptLanguage: string, claim?: IdempotencyClaim) {
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
      return submitAction(services, {
        caller, type: 'video', product: 'video', price: priceOf(prices, { product: 'video', durationSec: body.duration_sec }),
        params, inputs: final ? [image, final] : [image], idempotency: claim,
        placement: {
          kind: 'new-card', projectId: body.project_id, aspectRatio: body.aspect_ratio, contentType: 'video',
          hints: { name: null, productName: null, categoryId: null, conceptId: null },
        },
        clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
        respond: (placed) => generationResponse(placed, null),
      });
    },
  };
}
