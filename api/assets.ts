import type { Middleware } from 'koa';
import { isValidAssetKey } from '../src/storage/asset-store';
import { AppError, notFound } from './errors';
import type { ApiServices } from './services';

/** GET /assets/<key>?expires=&signature=: serves a stored file to whoever holds a valid signed URL. */
export function serveAssets({ store, signer }: ApiServices): Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith('/assets/') || !['GET', 'HEAD'].includes(ctx.method)) return next();
    const key = ctx.path.slice('/assets/'.length);
    if (!isValidAssetKey(key)) throw notFound('Asset');
    const query = new URLSearchParams(ctx.querystring); // not ctx.query: quadratic in repeated names (see app.ts)
    const verdict = signer.verify(key, query.get('expires') ?? undefined, query.get('signature') ?? undefined);
    if (verdict === 'invalid') throw new AppError(403, 'forbidden', 'The link signature is not valid');
    if (verdict === 'expired') throw new AppError(403, 'forbidden', 'The link has expired; ask the status endpoint for a fresh one');
    const asset = await store.open(key);
    if (!asset) throw notFound('Asset');
    ctx.type = asset.contentType;
    ctx.length = asset.size;
    ctx.set('Cache-Control', 'private, max-age=3600');
    ctx.body = asset.stream;
  };
}
