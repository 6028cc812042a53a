import type { Context } from 'koa';
import { MAX_IMAGE_BYTES } from '../src/generation/images';

/** Where the v1 routes (`/api/v1/public`) and the v2 jobs (`/api/v2`) are served. */
export const V1_PREFIX = '/api/v1/public';
export const V2_PREFIX = '/api/v2';

export type JsonSchema = Record<string, unknown>;

/** A UUID path parameter (job and batch ids); anything else is the same 404 as an unknown id. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface RouteResponse {
  description: string;
  schema?: JsonSchema;
  /** The media type of `schema` (JSON unless said). */
  mediaType?: string;
  headers?: Record<string, { description: string; schema: JsonSchema }>;
}

/**
 * One endpoint, described once: the router registers it with its validators, and the OpenAPI document is
 * generated from the same description, so the document cannot drift from what AJV enforces.
 */
export interface Route {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI-style path relative to the version prefix, e.g. `/status/{action_id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  params?: JsonSchema;
  query?: JsonSchema;
  body?: JsonSchema;
  /**
   * How many base64 images the body can carry (from its schema). Such a body is capped at that many 15 MB images
   * plus 1 MB, and over it answers 413 `image_too_large`; a body without images is capped at 128 KiB (413
   * `request_too_large`), so no request can make the API buffer more than its largest legal body.
   */
  bodyImages?: number;
  /** A body limit of its own (413 `request_too_large` past it), instead of the one `bodyImages` implies. */
  bodyBytes?: number;
  /** A body may hold this many JSON values (MAX_JSON_VALUES unless set). */
  bodyValues?: number;
  /**
   * The body may also be `application/x-ndjson`, one object per line, up to this many lines: the handler gets
   * `{items: [...]}` and `ctx.state.ndjson` says each item's line (NdjsonLines).
   */
  ndjsonLines?: number;
  /** Request headers the handler reads (documented only). */
  headers?: { name: string; description: string; schema: JsonSchema }[];
  responses: Record<number, RouteResponse>;
  /** Runs before anything of the request is validated or read (the dashboard's session and role checks). */
  authorize?(ctx: Context): void;
  handle(ctx: Context, input: { body: any; query: any; params: any }): Promise<void>;
}

export interface RouteGroup {
  prefix: string;
  /** Whether the group sits behind the API-key middleware (and the rate limit). */
  authenticated: boolean;
  /** Operational endpoints (health) stay out of the integrators' OpenAPI document. */
  documented: boolean;
  routes: Route[];
}

/** Base64 text of the largest image (15 MB decoded). */
const MAX_BASE64_IMAGE_BYTES = Math.ceil(MAX_IMAGE_BYTES / 3) * 4;

/**
 * Room for any legal body without images: the longest (a project, 5,500 characters of text) is 22 KB in UTF-8 and
 * 66 KB even when every character is an escaped surrogate pair (`\ud83d\ude00`, as `ensure_ascii` writes emoji).
 */
export const DEFAULT_BODY_LIMIT_BYTES = 128 * 1024;

/** The most a route's body may weigh, and the 413 code past it. */
export function bodyLimit(route: Pick<Route, 'bodyImages' | 'bodyBytes'>): { bytes: number; code: 'image_too_large' | 'request_too_large' } {
  if (route.bodyBytes) return { bytes: route.bodyBytes, code: 'request_too_large' };
  if (!route.bodyImages) return { bytes: DEFAULT_BODY_LIMIT_BYTES, code: 'request_too_large' };
  return { bytes: route.bodyImages * MAX_BASE64_IMAGE_BYTES + 1024 * 1024, code: 'image_too_large' };
}
