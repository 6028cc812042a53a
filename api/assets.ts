import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import { DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS } from '../src/config';
import { type ByteRange, isValidAssetKey, RangeNotSatisfiable, type StoredAsset } from '../src/storage/asset-store';
import { AppError, notFound } from '../src/errors';
import type { ApiServices } from './services';

const DEFAULT_PRESIGN_SECONDS = 300;

/**
 * Ends `res` (and with it the store's stream and the socket) once its socket has taken no byte for `idleMs`: a
 * reader that stops reading. Backpressure already keeps what such a reader holds to the socket's buffers; this gives
 * them back. Its own timer, not the socket's timeout, which Node also uses for an idle kept-alive connection and
 * which could not be handed back to Node once the answer ends.
 */
function dropStalledReader(res: ServerResponse, idleMs: number): void {
  const socket = res.socket;
  if (!socket) return;
  let written = socket.bytesWritten;
  let progressed = Date.now();
  const check = () => {
    if (socket.bytesWritten !== written) {
      written = socket.bytesWritten;
      progressed = Date.now();
    }
    if (Date.now() - progressed >= idleMs) res.destroy();
    else timer.refresh();
  };
  const timer = setTimeout(check, Math.max(10, idleMs / 4));
  res.once('close', () => clearTimeout(timer));
}

/**
 * The one range of a `Range` header (`bytes=a-b`, `bytes=a-`, `bytes=-n`); undefined for no header, another unit,
 * several ranges or a malformed one, which HTTP lets a server answer with the whole body (RFC 9110 §14.2).
 */
export function parseRange(header: string | undefined): ByteRange | undefined {
  const match = /^bytes=[ \t]*(\d{0,15})-(\d{0,15})[ \t]*$/i.exec(header ?? '');
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') return { last: Number(match[2]) };
  const start = Number(match[1]);
  if (match[2] === '') return { start };
  const end = Number(match[2]);
  return end < start ? undefined : { start, end };
}

/**
 * GET/HEAD /assets/<key>?expires=&signature=: serves a stored file to whoever holds a valid signed URL (the public
 * `result_url`, valid up to 30 days). A store that presigns its own URLs (S3) with `ASSET_DELIVERY=redirect` gets
 * a 302 to a short-lived presigned URL, so the bytes do not pass through the API; otherwise the API streams them,
 * one `Range` at a time (a browser playing a video asks for ranges).
 */
export function serveAssets({ store, signer, config }: ApiServices): Middleware {
  const idleMs = (config.httpIdleTimeoutSeconds ?? DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS) * 1000;
  const redirect = (config.assetDelivery ?? 'redirect') === 'redirect' && store.presign !== undefined;
  const presignSeconds = config.s3PresignSeconds ?? DEFAULT_PRESIGN_SECONDS;
  return async (ctx, next) => {
    if (!ctx.path.startsWith('/assets/') || !['GET', 'HEAD'].includes(ctx.method)) return next();
    const key = ctx.path.slice('/assets/'.length);
    if (!isValidAssetKey(key)) throw notFound('Asset');
    const query = new URLSearchParams(ctx.querystring); // not ctx.query: quadratic in repeated names (see app.ts)
    const expires = query.get('expires') ?? undefined;
    const verdict = signer.verify(key, expires, query.get('signature') ?? undefined);
    if (verdict === 'invalid') throw new AppError(403, 'forbidden', 'The link signature is not valid');
    if (verdict === 'expired') throw new AppError(403, 'forbidden', 'The link has expired; ask the status endpoint for a fresh one');

    if (redirect) {
      // Never longer than the signed link itself has left.
      const ttl = Math.max(1, Math.min(presignSeconds, Number(expires) - Math.floor(Date.now() / 1000)));
      const url = await store.presign!(key, ttl, ctx.method as 'GET' | 'HEAD');
      if (!url) throw notFound('Asset');
      ctx.set('Cache-Control', 'private, no-store'); // the presigned URL expires long before a cache would drop it
      ctx.redirect(url);
      return;
    }

    // `If-Range` asks for the range only if the representation is unchanged; we send no validators, so never.
    const range = ctx.get('If-Range') ? undefined : parseRange(ctx.get('Range') || undefined);
    let asset: StoredAsset | undefined;
    try {
      asset = await store.open(key, range);
    } catch (err) {
      if (err instanceof RangeNotSatisfiable) {
        throw new AppError(416, 'range_not_satisfiable', `The requested range is outside the asset (${err.size} bytes)`, { size: err.size },
          { 'Content-Range': `bytes */${err.size}`, 'Accept-Ranges': 'bytes' });
      }
      throw err;
    }
    if (!asset) throw notFound('Asset');
    ctx.set('Accept-Ranges', 'bytes');
    ctx.set('Cache-Control', 'private, max-age=3600');
    ctx.type = asset.contentType;
    if (asset.range) {
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${asset.range.start}-${asset.range.end}/${asset.size}`);
      ctx.length = asset.range.end - asset.range.start + 1;
    } else {
      ctx.length = asset.size;
    }
    ctx.body = asset.stream; // Koa destroys the stream when the response ends, also for HEAD and a client gone
    // Headers are sent by the time the store's stream fails (an S3 socket gone idle or cut): end the connection, so
    // the reader sees a short body, not a hang.
    asset.stream.once('error', () => ctx.res.destroy());
    dropStalledReader(ctx.res, idleMs);
  };
}
