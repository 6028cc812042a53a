/** POST /upload: store an image once and refer to it by `upl_` id for an hour (limit checked before storing). */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { sqlRow } from '../../src/db/sql';
import { AppError } from '../../src/errors';
import { checkImage, decodeBase64Image, inputKey } from '../../src/generation/images';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';

export const UPLOAD_TTL_SECONDS = 3600;
export const MAX_ACTIVE_UPLOADS = 20;

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
        const activeUploads = (m: EntityManager) => sqlRow(m,
          'SELECT count(*)::int AS n, min(expires_at) AS oldest FROM uploads WHERE account_id = $1 AND expires_at > now()', [caller.accountId]);
        const refuse = (oldest: Date): never => {
          ctx.set('Retry-After', String(Math.max(1, Math.ceil((oldest.getTime() - Date.now()) / 1000))));
          throw new AppError(429, 'upload_limit_exceeded', `At most ${MAX_ACTIVE_UPLOADS} uploads can be active; the oldest expires at ${oldest.toISOString()}`, {
            limit: MAX_ACTIVE_UPLOADS, reset_at: oldest.toISOString(),
          });
        };
        // The limit first, so a refused upload decodes and stores nothing; checked again below, where it is exact.
        const before = await activeUploads(db.manager);
        if (before!.n >= MAX_ACTIVE_UPLOADS) refuse(new Date(before!.oldest));
        const image = await checkImage(decodeBase64Image(body.image.data, 'image'), 'image');
        const key = inputKey(image);
        await store.put(key, image.bytes);
        const uploadId = `upl_${randomBytes(18).toString('base64url')}`;
        const refused = await db.transaction(async (m) => {
          // Serialise this account's uploads so the limit holds under concurrency.
          await m.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [caller.accountId]);
          const active = await activeUploads(m);
          if (active!.n >= MAX_ACTIVE_UPLOADS) return new Date(active!.oldest); // the file is left to the purge
          await m.query(
            `INSERT INTO uploads (id, account_id, input_key, format, width, height, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
            [uploadId, caller.accountId, key, image.format, image.width, image.height, UPLOAD_TTL_SECONDS]);
          return undefined;
        });
        if (refused) refuse(refused);
        ctx.status = 201;
        ctx.body = { upload_id: uploadId, expires_in: UPLOAD_TTL_SECONDS };
      },
    },
  ];
}
