/**
 * The OpenAPI 3.1 document, generated from the route descriptions and the very schemas AJV enforces.
 */
import { MIN_BODY_BYTES_PER_SECOND } from './middleware/body-pace';
import { bodyLimit, type JsonSchema, type Route, type RouteGroup } from './route';
import { SHARED_SCHEMAS } from './schemas/shared';
import { SANDBOX_SCENARIOS } from '../src/providers/sandbox';

/** Rewrites AJV-style `{$ref: 'Name'}` into `#/components/schemas/Name` and drops `$id`. */
function publish(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(publish);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$id') continue;
    out[key] = key === '$ref' && typeof value === 'string' && !value.startsWith('#') ? `#/components/schemas/${value}` : publish(value);
  }
  return out;
}

function parameters(where: 'path' | 'query', schema: JsonSchema | undefined) {
  if (!schema) return [];
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries((schema.properties as Record<string, JsonSchema>) ?? {}).map(([name, property]) => ({
    name, in: where, required: where === 'path' || required.has(name), schema: publish(property),
    ...(property.description ? { description: property.description } : {}),
  }));
}

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { description: 'Requests allowed per minute for this key', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'When the window resets (epoch seconds)', schema: { type: 'integer' } },
};

function operation(route: Route, group: RouteGroup) {
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.headers || group.authenticated ? { headers: { ...(group.authenticated ? RATE_LIMIT_HEADERS : {}), ...response.headers } } : {}),
      ...(response.schema || Number(status) >= 400
        ? { content: { [response.mediaType ?? 'application/json']: { schema: response.schema ? publish(response.schema) : { $ref: '#/components/schemas/Error' } } } }
        : {}),
    };
  }
  if (route.params || route.body) responses['400'] ??= errorResponse('Invalid data or format');
  if (route.body) {
    const limit = bodyLimit(route);
    const over = `\`${limit.code}\`: the body is over ${limit.bytes} bytes`;
    const documented = responses['413'] as { description: string } | undefined;
    responses['413'] = documented ? { ...documented, description: `${documented.description}, or ${over}` } : errorResponse(over);
    responses['408'] = errorResponse('`request_timeout`: the body sent nothing for `HTTP_IDLE_TIMEOUT_SECONDS` (30 s), or fell that far behind '
      + `${MIN_BODY_BYTES_PER_SECOND / 1024} KiB/s; the connection is closed after this answer`);
    const busy = '`generation_unavailable`: the server holds as many request bodies as it can (`MAX_BODY_BYTES_IN_FLIGHT`); try again after `Retry-After`';
    const unavailable = responses['503'] as { description: string } | undefined;
    responses['503'] = {
      ...(unavailable ? { ...unavailable, description: `${unavailable.description}; or ${busy}` } : errorResponse(busy)),
      headers: { ...(group.authenticated ? RATE_LIMIT_HEADERS : {}), ...(unavailable as { headers?: object } | undefined)?.headers, 'Retry-After': { description: 'Seconds', schema: { type: 'integer' } } },
    };
  }
  if (group.authenticated) {
    responses['400'] ??= errorResponse('`unsupported_parameter`: `X-Sandbox-Scenario` sent with a live key');
    responses['401'] = errorResponse('Missing authorization (`missing_authorization`) or invalid key (`invalid_api_key`)');
    if (route.params) {
      responses['403'] ??= errorResponse('The resource belongs to another account');
      responses['404'] ??= errorResponse('Not found');
    }
    const rateLimited = 'Rate limit exceeded (`rate_limit_exceeded`, details: limit, reset_at)';
    const tooMany = route.responses[429]?.description;
    responses['429'] = {
      ...errorResponse(tooMany ? `${rateLimited}; or ${tooMany}` : rateLimited),
      headers: { ...RATE_LIMIT_HEADERS, 'Retry-After': { description: 'Seconds until the window resets', schema: { type: 'integer' } } },
    };
  }
  if (route.params || route.query || route.body) {
    responses['422'] = { description: 'Validation failed', content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationError' } } } };
  }
  const internalError = { $ref: '#/components/schemas/InternalError' };
  const documentedFailure = route.responses[500];
  responses['500'] = documentedFailure
    ? {
      description: `${documentedFailure.description}; or an unexpected failure (the bare root body)`,
      content: { 'application/json': { schema: { oneOf: [{ $ref: '#/components/schemas/Error' }, internalError] } } },
    }
    : { description: 'Unexpected failure', content: { 'application/json': { schema: internalError } } };
  return {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    ...(group.authenticated ? {} : { security: [] }),
    parameters: [
      ...parameters('path', route.params),
      ...parameters('query', route.query),
      ...(route.headers ?? []).map((h) => ({ name: h.name, in: 'header', required: false, description: h.description, schema: h.schema })),
      ...(group.authenticated ? [SANDBOX_SCENARIO_PARAMETER] : []),
    ],
    ...(route.body ? {
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: publish(route.body) },
          ...(route.ndjsonLines ? { 'application/x-ndjson': { schema: { type: 'string', description: `Up to ${route.ndjsonLines} lines, one item object per line` } } } : {}),
        },
      },
    } : {}),
    responses,
  };
}

/** Every authenticated operation reads it (src/providers/sandbox, api/middleware/auth.ts). */
const SANDBOX_SCENARIO_PARAMETER = {
  name: 'X-Sandbox-Scenario', in: 'header', required: false,
  description: 'Sandbox keys (`ak_test_`) only: a failure drill for the work this request starts. `provider_error`: it fails, released; '
    + '`provider_timeout`: retried, then fails; `retry_then_succeed`: fails its first attempt (a v2 job goes through `retry_scheduled`); '
    + '`slow`: stays `processing` for a while; `webhook_fail_then_succeed`: the first two attempts of each webhook delivery are answered 500. '
    + 'With a live key: 400 `unsupported_parameter`; an unknown value: 422.',
  schema: { type: 'string', enum: [...SANDBOX_SCENARIOS] },
};

const TAG_DESCRIPTIONS: Record<string, string> = {
  Information: 'Balance, prices and the category catalogue',
  Generation: 'Asynchronous photo, card and video generation and edits',
  'Status and results': 'Polling, cancelling and downloading results',
  'Projects and cards': 'Project > Card > Action: how results are grouped',
  Webhooks: 'Registered webhooks, their deliveries and redelivery',
  'AI helpers': 'Synchronous marketing text and video scenarios from photos: 100 free calls a day (UTC), then 1 spark per started block of 20',
  'Jobs v2': 'Durable jobs for photo generation and edit: status, phase, polling hints, owner-checked cancel',
  'Batches v2': 'A catalogue in one request: photos, cards, videos and edits run as v2 jobs, exactly once per external_id, under a budget',
};

export function buildOpenApiDocument(allGroups: RouteGroup[], serverUrl: string) {
  const groups = allGroups.filter((g) => g.documented);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const group of groups) {
    for (const route of group.routes) {
      const path = `${group.prefix}${route.path}`;
      (paths[path] ??= {})[route.method] = operation(route, group);
    }
  }
  const tags = [...new Set(groups.flatMap((g) => g.routes.map((r) => r.tag)))].map((name) => ({
    name, description: TAG_DESCRIPTIONS[name] ?? name,
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Product Imagery Generation Service',
      version: '1.0.0',
      description: 'Product photos, marketing cards and videos from product photos. v1 under /api/v1/public, v2 jobs under /api/v2.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: serverUrl }],
    security: [{ bearerAuth: [] }],
    tags,
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key `ak_...` (a sandbox key: `ak_test_...`)' } },
      schemas: Object.fromEntries(Object.entries(SHARED_SCHEMAS).map(([name, schema]) => [name, publish(schema)])),
    },
  };
}
