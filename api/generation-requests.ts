/**
 * What accepting a v1 generation does once its body is valid, for the public routes (api/routes/generate.ts) and the
 * dashboard's Try it alike: read the images (by their headers; the worker decodes them), fill in what is missing,
 * price, then submit (one transaction for card, action and hold; then the images are stored and the workflow
 * starts). The caller is whoever the request is attributed to (an API key of the account).
 */
import { submitAction } from '../src/actions/submit';
import type { IdempotencyClaim } from '../src/idempotency/keys';
import { generationPreparation, newVideoCard } from '../src/generation/prepare';
import type { Caller, Services } from '../src/services';
import { detectedView, generationResponse } from './generation';
import type { CardRequest, PhotoRequest, VideoRequest } from './schemas/generate';

export function generationRequests(services: Services) {
  const { newCard, preparePhoto, prepareCard, prepareVideo } = generationPreparation(services);
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
      const { found, price, params, images } = await prepareCard(body, caller, acceptLanguage);
      return submitAction(services, {
        caller, type: 'generate', product: 'card', price, params, inputs: images, idempotency: claim,
        placement: newCard(body, found),
        clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
        respond: (placed) => ({ ...generationResponse(placed, detectedView(found)), style: body.style }),
      });
    },

    async video(caller: Caller, body: VideoRequest, _acceptLanguage: string, claim?: IdempotencyClaim) {
      const { price, params, images } = await prepareVideo(body, caller);
      return submitAction(services, {
        caller, type: 'video', product: 'video', price, params, inputs: images, idempotency: claim,
        placement: newVideoCard(body),
        clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
        respond: (placed) => generationResponse(placed, null),
      });
    },
  };
}
