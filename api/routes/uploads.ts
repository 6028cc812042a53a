/** POST /upload: store an image once and refer to it by `upl_` id for an hour (limit checked before storing). */
import { AppError } from '../../src/errors';
import { checkImage, decodeBase64Image, inputKey } from '../../src/generation/images';
import { activeUploads, MAX_ACTIVE_UPLOADS, recordUpload, UPLOAD_TTL_SECONDS } from '../../src/generation/uploads';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';


export function uploadRoutes({ db, store }: ApiServices): Route[] {
  return [
    {
      method: 'post', path: '/upload', operationId: 'uploadImage', tag: 'Generation',
      summary: 'Upload an image; pass the returned upload_id as `data` of an ImageInput within an hour',
      body: {
        type: 'object', required: ['image'],
        properties: {
          image: {
            type: 'object', required: ['data'],
            properties: { data: { type: 'string', minLength: 1 }, media_type: { type: 'string', maxLength: 100, default: 'image/jpeg' } },
          },
        },
      },
      bodyImages: 1,
      responses: {
        201: {
          description: 'The upload',
          schema: {
            type: 'object', required: ['upload_id', 'expires_in'],
            properties: { upload_id: { type: 'string', pattern: '^upl_' }, expires_in: { type: 'integer', enum: [UPLOAD_TTL_SECONDS] } },
          },
        },
        400: { description: '`invalid_request`: not a readable JPEG, PNG, WebP or HEIC image' },
        413: { description: '`image_too_large`: over 15 MB decoded or over 50 megapixels (25 for HEIC) or 20,000 pixels a side' },
        429: { description: '`upload_limit_exceeded`: 20 uploads are active; details: limit, reset_at (when the oldest expires)' },
      },
      async handle(ctx, { body }) {
        const caller = ctx.state.caller as Caller;
        const refuse = (oldest: Date): never => {
          ctx.set('Retry-After', String(Math.max(1, Math.ceil((oldest.getTime() - Date.now()) / 1000))));
          throw new AppError(429, 'upload_limit_exceeded', `At most ${MAX_ACTIVE_UPLOADS} uploads can be active; the oldest expires at ${oldest.toISOString()}`, {
            limit: MAX_ACTIVE_UPLOADS, reset_at: oldest.toISOString(),
          });
        };
        // The limit first, so a refused upload decodes and stores nothing; checked again below, where it is exact.
        const before = await activeUploads(db.manager, caller.accountId);
        if (before.n >= MAX_ACTIVE_UPLOADS) refuse(new Date(before.oldest!));
        const image = await checkImage(decodeBase64Image(body.image.data, 'image'), 'image');
        const key = inputKey(image);
        await store.put(key, image.bytes);
        const recorded = await recordUpload(db, caller.accountId, { key, format: image.format, width: image.width, height: image.height });
        if ('full' in recorded) refuse(recorded.full); // the stored file is left to the purge
        ctx.status = 201;
        ctx.body = { upload_id: (recorded as { uploadId: string }).uploadId, expires_in: UPLOAD_TTL_SECONDS };
      },
    },
  ];
}
