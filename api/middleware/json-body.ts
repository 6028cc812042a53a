import type { Middleware } from 'koa';
import { AppError, badRequest } from '../errors';

/**
 * Reads a JSON body into `ctx.request.body`. The cap fits the largest legal request (5 images of 15 MB each,
 * base64-encoded, plus the other fields); anything larger is refused while streaming.
 */
export function jsonBody(limitBytes: number): Middleware {
  return async (ctx, next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > limitBytes) throw new AppError(413, 'image_too_large', `Request body over ${limitBytes} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      size += chunk.length;
      if (size > limitBytes) throw new AppError(413, 'image_too_large', `Request body over ${limitBytes} bytes`);
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (text.trim() === '') {
      (ctx.request as { body?: unknown }).body = undefined;
      return next();
    }
    if (!ctx.is('application/json', 'json', '+json') && ctx.get('Content-Type')) {
      throw badRequest('Content-Type must be application/json');
    }
    try {
      (ctx.request as { body?: unknown }).body = JSON.parse(text);
    } catch {
      throw badRequest('The request body is not valid JSON');
    }
    await next();
  };
}
