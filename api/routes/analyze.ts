/** POST /analyze: category, product name and qualities of a product photo, from the text provider. Free. */
import { requireProvider, textFor } from '../../src/providers';
import { analyzeProduct } from '../../src/generation/ask-text-provider';
import { imageReader } from '../../src/generation/images';
import { resolveLocale } from '../../src/locale';
import type { Route } from '../route';
import { AnalyzeRequest, analysisSchema, analyzeRequestSchema } from '../schemas/helpers';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';

export function analyzeRoutes(services: ApiServices): Route[] {
  const readImage = imageReader(services);
  return [
    {
      method: 'post', path: '/analyze', operationId: 'analyzeProduct', tag: 'Generation',
      summary: 'Detect the category, product name and qualities of a product photo (synchronous, free)',
      body: analyzeRequestSchema,
      bodyImages: 1,
      responses: {
        200: { description: 'The analysis', schema: analysisSchema },
        400: { description: '`invalid_request`: the image cannot be read or fetched; `upload_not_found`, `upload_expired`' },
        413: { description: '`image_too_large`: the image is over 15 MB decoded or over 50 megapixels (25 for HEIC) or 20,000 pixels a side' },
        500: { description: '`analysis_failed`: the text provider failed or answered outside the contract' },
        503: { description: '`generation_unavailable`: the text provider is not configured' },
      },
      async handle(ctx, { body }: { body: AnalyzeRequest }) {
        const caller = ctx.state.caller as Caller;
        requireProvider(services, 'text', caller);
        const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
        const image = await readImage(body.image, 'image', caller.accountId);
        ctx.body = await analyzeProduct(textFor(services.providers, caller), [image.bytes], locale);
      },
    },
  ];
}
