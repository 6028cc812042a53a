/**
 * The Koa application: request id, errors, signed assets, the API key and rate limit for everything under the v1
 * and v2 prefixes, the JSON body, then one router per route group.
 */
import path from 'node:path';
import Koa, { Middleware } from 'koa';
import compose from 'koa-compose';
import Router from '@koa/router';
import { log } from '../src/log';
import { serveAssets } from './assets';
import { authenticate } from './middleware/auth';
import { unreadBodyDeadline } from './middleware/body-pace';
import { errorHandler } from './middleware/error-handler';
import { findUnstorable, jsonBody } from './middleware/json-body';
import { ValidationFailed } from '../src/errors';
import { rateLimit } from './middleware/rate-limit';
import { DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS } from '../src/config';
import { requestId } from './middleware/request-id';
import { traceRequest } from './middleware/trace-request';
import { tracingOn } from '../src/telemetry/spans';
import { requestMetrics } from './middleware/request-metrics';
import { buildOpenApiDocument } from './openapi';
import { bodyLimit, type Route, type RouteGroup, V1_PREFIX, V2_PREFIX } from './route';
import { analyzeRoutes } from './routes/analyze';
import { editRoutes } from './routes/edit';
import { generateRoutes } from './routes/generate';
import { healthRoutes } from './routes/health';
import { helperRoutes } from './routes/ai-helpers';
import { funnelRoutes } from './routes/funnels';
import { infoRoutes } from './routes/info';
import { projectRoutes } from './routes/projects';
import { quoteRoutes } from './routes/quote';
import { eventFeedRoutes } from './routes/events';
import { statusRoutes } from './routes/status';
import { uploadRoutes } from './routes/uploads';
import { webhookRoutes } from './routes/webhooks';
import { jobRoutes } from './routes/jobs';
import { batchRoutes } from './routes/batches';
import type { ApiServices } from './services';
import { billingRoutes } from './dashboard/billing-routes';
import { galleryRoutes } from './dashboard/gallery-routes';
import { batchDashboardRoutes } from './dashboard/batch-routes';
import { keyRoutes } from './dashboard/key-routes';
import { memberRoutes } from './dashboard/member-routes';
import { overviewRoutes } from './dashboard/overview-routes';
import { serveDashboardPages } from './dashboard/pages';
import { DASHBOARD_API_PREFIX, dashboardSessionGuard, dashboardSettings } from './dashboard/session-guard';
import { sessionRoutes } from './dashboard/session-routes';
import { signUpRoutes } from './dashboard/sign-up-routes';
import { tryRoutes } from './dashboard/try-routes';
import { webhookRoutes as dashboardWebhookRoutes } from './dashboard/webhook-routes';
import { compileValidator } from './validation';
import type { InteractiveDemandMeter } from '../src/batches/interactive-demand';

export function routeGroups(services: ApiServices): RouteGroup[] {
  return [
    { prefix: '', authenticated: false, documented: false, routes: healthRoutes(services) },
    {
      prefix: V1_PREFIX,
      authenticated: true,
      documented: true,
      routes: [
        ...projectRoutes(services), ...uploadRoutes(services), ...analyzeRoutes(services), ...generateRoutes(services), ...editRoutes(services),
        ...statusRoutes(services), ...webhookRoutes(services), ...infoRoutes(services), ...quoteRoutes(services), ...helperRoutes(services),
        ...funnelRoutes(services), ...eventFeedRoutes(services, 'v1'),
      ],
    },
    { prefix: V2_PREFIX, authenticated: true, documented: true, routes: [...jobRoutes(services), ...batchRoutes(services), ...eventFeedRoutes(services, 'v2')] },
    // The dashboard's own routes: a user session (api/dashboard/session-guard.ts), never an API key, not in the OpenAPI document.
    ...(dashboardSettings(services.config).enabled ? [{
      prefix: DASHBOARD_API_PREFIX, authenticated: false, documented: false,
      routes: [...sessionRoutes(services), ...signUpRoutes(services), ...overviewRoutes(services), ...keyRoutes(services), ...memberRoutes(services), ...dashboardWebhookRoutes(services),
        ...billingRoutes(services), ...galleryRoutes(services), ...batchDashboardRoutes(services), ...tryRoutes(services)],
    }] : []),
  ];
}

/**
 * The OpenAPI document of the public groups, with `serverUrl` as its server, without a running service: the routes'
 * descriptions and schemas are data, and their handlers (closures over the services) are never called here. The
 * typed client's types are generated from it (`npm run client:types`).
 */
export function publicOpenApiDocument(config: ApiServices['config'], serverUrl: string) {
  return buildOpenApiDocument(routeGroups({ config } as ApiServices), serverUrl);
}

function toKoaPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/**
 * The query as Koa shapes it (a repeated name gives an array) in one pass: Koa's `ctx.query` calls `getAll` once
 * per name, so a query of a few thousand repeated names cost a second of CPU. No prototype, so `__proto__` is a
 * name like any other.
 */
function queryOf(querystring: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of new URLSearchParams(querystring)) {
    const seen = query[name];
    if (seen === undefined) query[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else query[name] = [seen, value];
  }
  return query;
}

/**
 * The route's handler: its path, query and body validated, then the route called. With `demand`, the time the route
 * takes is counted as interactive demand (batches yield to it, src/batches/interactive-demand.ts) when the request
 * carries an API key or a dashboard session: a request refused before its route (no key, the rate limit, a body
 * too slow or too large) and the body's arrival never count, so that no one can slow the batches without a key.
 */
function handler(route: Route, demand?: InteractiveDemandMeter): Middleware {
  const validateParams = route.params ? compileValidator('path', route.params) : undefined;
  const validateQuery = route.query ? compileValidator('query', route.query) : undefined;
  const validateBody = route.body ? compileValidator('body', route.body) : undefined;
  return async (ctx) => {
    route.authorize?.(ctx);
    const params = validateParams ? validateParams({ ...(ctx as unknown as { params: object }).params }) : {};
    const sentQuery = queryOf(ctx.querystring);
    const unfit = findUnstorable(sentQuery, ['query']) ?? findUnstorable((ctx as unknown as { params: object }).params, ['path']);
    if (unfit) throw new ValidationFailed([unfit]);
    const query = validateQuery ? validateQuery({ ...sentQuery }) : {};
    const sent = (ctx.request as { body?: unknown }).body;
    // A body whose every field is optional may be left out entirely.
    const body = validateBody ? validateBody(sent === undefined && !route.body!.required ? {} : sent) : undefined;
    const end = demand && (ctx.state.caller || ctx.state.session) ? demand.begin() : undefined;
    try {
      await route.handle(ctx, { params, query, body });
    } finally {
      end?.();
    }
  };
}

/** A catalogue batch's own routes (its creation, polls and manifests): batch traffic, not demand it yields to. */
const BATCH_ROUTES = `${V2_PREFIX}/batches`;

/** Runs `middleware` for every path under `prefix`, matched route or not (so unknown paths need a key too). */
function underPrefix(prefix: string, middleware: Middleware): Middleware {
  const lower = prefix.toLowerCase();
  return (ctx, next) => {
    const path = ctx.path.toLowerCase(); // never trust the router's case rules to keep a path out of the guard
    return path === lower || path.startsWith(`${lower}/`) ? middleware(ctx, next) : next();
  };
}

export function createApp(services: ApiServices): Koa {
  const app = new Koa({ proxy: true });
  const groups = routeGroups(services);
  const openapi = buildOpenApiDocument(groups, services.config.publicBaseUrl);
  const guard = compose([authenticate(services), rateLimit(services)]);
  const bodyIdleMs = (services.config.httpIdleTimeoutSeconds ?? DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS) * 1000;

  // Errors after an answer has started (a streamed asset whose store stream fails): logged as our JSON lines, not
  // as Koa's default stack trace on stderr. Errors before that are answered by errorHandler.
  app.on('error', (err: Error, ctx?: Koa.Context) => {
    log.warn('answer ended early', { requestId: ctx?.state.requestId, path: ctx?.path, error: err.message });
  });
  app.use(requestMetrics(groups.map((g) => g.prefix ?? '')));
  app.use(unreadBodyDeadline(bodyIdleMs));
  app.use(requestId());
  if (tracingOn()) app.use(traceRequest()); // outside errorHandler: the span ends with the status answered
  app.use(errorHandler());
  app.use(serveAssets(services));
  for (const group of groups.filter((g) => g.authenticated)) app.use(underPrefix(group.prefix, guard));
  if (dashboardSettings(services.config).enabled) {
    app.use(serveDashboardPages(path.join(__dirname, '..', 'web'), services.config.publicBaseUrl, services.store)); // dist/web, next to dist/api
    app.use(underPrefix(DASHBOARD_API_PREFIX, dashboardSessionGuard(services)));
  }

  const root = new Router({ sensitive: true });
  root.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });
  for (const group of groups) {
    const router = new Router({ sensitive: true, ...(group.prefix ? { prefix: group.prefix } : {}) });
    const demandOf = (route: Route) => (`${group.prefix ?? ''}${route.path}`.startsWith(BATCH_ROUTES) ? undefined : services.interactiveDemand);
    // Bodies are read only for a matched route that takes one, only after the key and rate limit passed, and only
    // up to what that route can legally receive.
    for (const route of group.routes) {
      if (route.body) {
        const authorize: Middleware = (ctx, next) => {
          route.authorize?.(ctx);
          return next();
        };
        router[route.method](toKoaPath(route.path), authorize, jsonBody(bodyLimit(route), services.bodyBytesInFlight, bodyIdleMs, { values: route.bodyValues, ndjsonLines: route.ndjsonLines }), handler(route, demandOf(route)));
      }
      else router[route.method](toKoaPath(route.path), handler(route, demandOf(route)));
    }
    root.use(router.routes(), router.allowedMethods({ throw: true }));
  }
  app.use(root.routes());
  app.use(root.allowedMethods({ throw: true }));
  return app;
}
