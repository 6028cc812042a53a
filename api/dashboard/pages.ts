/**
 * The dashboard's pages: the single-page app built into `dist/web/` (ops/build-web.ts), served under `/dashboard/`.
 * Hashed files (`/dashboard/assets/*`) are cached for a year; every other path is a page of the app, answered with
 * its `index.html`, revalidated each time. A strict Content-Security-Policy: everything from this origin, no inline
 * script, no framing; images and videos also from HTTPS origins (results are signed URLs of the public base URL,
 * which a deployment may serve from another origin, or redirect to its object store's presigned ones).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { send } from '@koa/send';
import type { Middleware } from 'koa';
import { DASHBOARD_API_PREFIX } from './session-guard';

export const DASHBOARD_PREFIX = '/dashboard';

/** The policy of the pages; `assetOrigin` is the public base URL's (where signed result URLs point). */
const contentSecurityPolicy = (assetOrigin: string) => [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", `img-src 'self' ${assetOrigin} data: blob: https:`,
  `media-src 'self' ${assetOrigin} https:`, "connect-src 'self'",
  "font-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

export function serveDashboardPages(webRoot: string, publicBaseUrl: string): Middleware {
  const policy = contentSecurityPolicy(new URL(publicBaseUrl).origin);
  return async (ctx, next) => {
    const p = ctx.path;
    const under = p === DASHBOARD_PREFIX || p.startsWith(`${DASHBOARD_PREFIX}/`);
    const api = p === DASHBOARD_API_PREFIX || p.startsWith(`${DASHBOARD_API_PREFIX}/`);
    if (!under || api || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    if (p === DASHBOARD_PREFIX) return ctx.redirect(`${DASHBOARD_PREFIX}/`);
    ctx.set({
      'Content-Security-Policy': policy, 'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer', 'X-Frame-Options': 'DENY',
    });
    const file = p.slice(DASHBOARD_PREFIX.length + 1);
    if (file.startsWith('assets/')) {
      await send(ctx, file, { root: webRoot, maxage: 365 * 24 * 3600 * 1000, immutable: true });
      return;
    }
    if (!existsSync(path.join(webRoot, 'index.html'))) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The dashboard is not built: run `npm run build`.';
      return;
    }
    ctx.set('Cache-Control', 'no-cache');
    await send(ctx, 'index.html', { root: webRoot });
  };
}
