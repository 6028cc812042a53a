import type { Middleware } from 'koa';
import { AppError, badRequest, ValidationFailed } from '../errors';

/** Where a string holding U+0000 sits (Postgres text cannot store it), if anywhere. */
export function findNul(value: unknown, loc: (string | number)[]): (string | number)[] | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? loc : undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findNul(item, [...loc, i]);
      if (found) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = findNul(key, [...loc, key]) ?? findNul(item, [...loc, key]);
      if (found) return found;
    }
  }
  return undefined;
}

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
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw badRequest('The request body is not valid JSON');
    }
    const nul = findNul(body, ['body']);
    if (nul) throw new ValidationFailed([{ loc: nul, msg: 'must not contain the NUL character', type: 'pattern' }]);
    (ctx.request as { body?: unknown }).body = body;
    await next();
  };
}
