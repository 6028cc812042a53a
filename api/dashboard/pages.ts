/**
 * The dashboard's pages: the single-page app built into `dist/web/` (ops/build-web.ts), served under `/dashboard/`.
 * Hashed files (`/dashboard/assets/*`) are cached for a year; every other path is a page of the app, answered with
 * its `index.html`, revalidated each time. A strict Content-Security-Policy: everything from this origin, no inline
 * script, no framing; images and videos also from where results are served (the public base URL's origin, and an
 * object store's that presigns them).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { send } from '@koa/send';
import type { Middleware } from 'koa';
import type { AssetStore } from '../../src/storage/asset-store';
import { DASHBOARD_API_PREFIX } from './session-guard';

export const DASHBOARD_PREFIX = '/dashboard';

/** The policy of the pages; `assetOrigins`: where results are served (signed URLs, and an object store's presigned ones). */
const contentSecurityPolicy = (assetOrigins: string[]) => [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", `img-src 'self' ${assetOrigins.join(' ')} data: blob:`,
  `media-src 'self' ${assetOrigins.join(' ')}`, "connect-src 'self'",
  "font-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

/**
 * The origins results come from: the public base URL's (signed asset URLs), and the object store's when it presigns
 * its own URLs (ASSET_DELIVERY=redirect sends a browser there), asked once.
 */
async function assetOrigins(publicBaseUrl: string, store: Pick<AssetStore, 'presignedOrigin'>): Promise<string[]> {
  const presigned = await store.presignedOrigin?.();
  return [...new Set([new URL(publicBaseUrl).origin, ...(presigned ? [presigned] : [])])];
}

export function serveDashboardPages(webRoot: string, publicBaseUrl: string, store: Pick<AssetStore, 'presignedOrigin'>): Middleware {
  let policy: Promise<string> | undefined;
  return async (ctx, next) => {
    const p = ctx.path;
    const under = p === DASHBOARD_PREFIX || p.startsWith(`${DASHBOARD_PREFIX}/`);
    const api = p === DASHBOARD_API_PREFIX || p.startsWith(`${DASHBOARD_API_PREFIX}/`);
    if (!under || api || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    if (p === DASHBOARD_PREFIX) return ctx.redirect(`${DASHBOARD_PREFIX}/`);
    ctx.set({
      'Content-Security-Policy': await (policy ??= assetOrigins(publicBaseUrl, store).then(contentSecurityPolicy)), 'X-Content-Type-Options': 'nosniff',
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
