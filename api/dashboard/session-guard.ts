/**
 * The dashboard's own JSON routes (`/dashboard/api/*`) sit behind a user session, never an API key:
 * - every answer is `Cache-Control: no-store`;
 * - a request that changes something (any method but GET and HEAD) must come from the dashboard's own origin (its
 *   `Origin` header equal to `PUBLIC_BASE_URL`'s origin or to the origin the request was sent to), so a cross-site
 *   form or fetch is refused before anything is read; signed in, it must also carry the session's CSRF token in
 *   `X-CSRF-Token` (checked per route, see dashboardRoute);
 * - the session cookie is read on every request and looked up in Postgres (no cache): a session ended by one process
 *   is refused by all from their next request.
 */
import type { Context, Middleware } from 'koa';
import { DEFAULT_DASHBOARD_SETTINGS } from '../../src/config';
import { AppError, notFound } from '../../src/errors';
import { log } from '../../src/log';
import type { SessionUser } from '../../src/users/sessions';
import { sessionOf } from '../../src/users/sessions';
import { sameToken } from '../../src/users/secret-tokens';
import type { ApiServices } from '../services';
import type { Route } from '../route';

/** Where the dashboard's JSON routes are served. */
export const DASHBOARD_API_PREFIX = '/dashboard/api';
/**
 * The session cookie: on an https base URL `__Host-imagery_session` (Secure, `Path=/`, no Domain: no sibling
 * subdomain can set or shadow it); on plain http (`npm start`) `imagery_session` with `Path=/dashboard`. The public
 * API never reads it.
 */
export const sessionCookie = (secure: boolean) => (secure ? { name: '__Host-imagery_session', path: '/' } : { name: 'imagery_session', path: '/dashboard' });
export const CSRF_HEADER = 'X-CSRF-Token';

const SAFE_METHODS = new Set(['GET', 'HEAD']);

export const csrfRefused = () => new AppError(403, 'csrf_refused', 'The request did not come from the dashboard');
export const notSignedIn = () => new AppError(401, 'not_signed_in', 'Sign in to the dashboard first');

export function dashboardSessionGuard({ db, config }: ApiServices): Middleware {
  const publicOrigin = new URL(config.publicBaseUrl).origin;
  const secure = config.publicBaseUrl.startsWith('https:');
  const cookie = sessionCookie(secure);
  const settings = dashboardSettings(config);
  return async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    if (secure) ctx.cookies.secure = true; // behind a TLS-terminating proxy the hop to us may be plain HTTP
    if (!SAFE_METHODS.has(ctx.method)) {
      // Koa's `ctx.origin` is the Origin header itself (Koa 3): the origin the request was sent to is built from
      // its Host header (which no cross-site page can set), for a browser that opened 127.0.0.1 and not localhost.
      const origin = ctx.get('Origin');
      if (!origin || (origin !== publicOrigin && origin !== `${ctx.protocol}://${ctx.get('Host')}`)) throw csrfRefused();
    }
    const token = ctx.cookies.get(cookie.name);
    ctx.state.session = token && /^[A-Za-z0-9_-]{43}$/.test(token) ? await sessionOf(db, token, settings) : undefined;
    await next();
  };
}

/** The dashboard's settings of the API (DEFAULT_DASHBOARD_SETTINGS where the services leave them out). */
export const dashboardSettings = (config: ApiServices['config']) => config.dashboard ?? DEFAULT_DASHBOARD_SETTINGS;

/** Sets the session cookie (HttpOnly, SameSite=Lax, Secure on an https base URL; a session cookie of the browser). */
export function setSessionCookie(ctx: Context, token: string, secure: boolean): void {
  const { name, path } = sessionCookie(secure);
  ctx.cookies.set(name, token, { httpOnly: true, sameSite: 'lax', secure, path, overwrite: true });
}

export function clearSessionCookie(ctx: Context, secure: boolean): void {
  const { name, path } = sessionCookie(secure);
  ctx.cookies.set(name, '', { httpOnly: true, sameSite: 'lax', secure, path, overwrite: true, expires: new Date(0) });
}

/**
 * The client's address for the sign-in throttle: the connection's peer, or, behind `trustedProxyHops` proxies that
 * each append to `X-Forwarded-For`, the entry that many from its end (what the nearest proxy saw). Entries before
 * it are whatever the client sent.
 */
export function clientAddress(ctx: Context, trustedProxyHops: number): string {
  const peer = ctx.req.socket.remoteAddress ?? '';
  if (trustedProxyHops === 0) return peer;
  const forwarded = ctx.get('X-Forwarded-For').split(',').map((a) => a.trim()).filter(Boolean);
  return forwarded[forwarded.length - trustedProxyHops] ?? peer;
}

/** Who may call a dashboard route: anyone (signing in), any signed-in user of the account, or its owners only. */
export type Access = 'public' | 'member' | 'owner';

export interface DashboardRoute extends Omit<Route, 'handle' | 'tag' | 'authorize'> {
  access: Access;
  /** `user` is the signed-in user (undefined on a public route). */
  handle(ctx: Context, input: { body: any; query: any; params: any; user: SessionUser }): Promise<void>;
}

/**
 * A dashboard route as the router takes it: its access checked before anything of the request is read (default deny:
 * every route names its access). Signed-in routes that change something need the session's CSRF token.
 */
export function dashboardRoute(route: DashboardRoute): Route {
  return {
    ...route,
    tag: 'Dashboard',
    authorize(ctx) {
      if (route.access === 'public') return;
      const user = ctx.state.session as SessionUser | undefined;
      if (!user) throw notSignedIn();
      if (!SAFE_METHODS.has(ctx.method) && !sameToken(ctx.get(CSRF_HEADER), user.csrfToken)) throw csrfRefused();
      if (route.access === 'owner' && user.role !== 'owner') throw new AppError(403, 'forbidden', 'Only an owner of the account can do this');
    },
    handle: (ctx, input) => route.handle(ctx, { ...input, user: ctx.state.session as SessionUser }),
  };
}

/**
 * The dashboard answers 404 for what belongs to another account, as for what does not exist (the public API's
 * use cases answer the contract's 403 `forbidden`): a signed-in user learns nothing of other accounts' ids.
 */
export async function hidingOtherAccounts<T>(work: Promise<T>, what: string): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw err instanceof AppError && err.status === 403 && err.code === 'forbidden' ? notFound(what) : err;
  }
}

/**
 * Runs `work` once the answer has gone (or the client left): for what must not make an answer take longer in one
 * case than another (a reset link made only for an email that has a user). A failure is logged.
 */
export function afterAnswer(ctx: Context, what: string, work: () => Promise<unknown>): void {
  const run = () => void work().catch((err: unknown) => log.warn(`${what} failed after its answer`, { error: (err as Error).message }));
  if (ctx.res.closed) run(); // the client left already
  else ctx.res.once('close', run);
}
