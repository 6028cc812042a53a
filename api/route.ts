import type { Context } from 'koa';

export type JsonSchema = Record<string, unknown>;

export interface RouteResponse {
  description: string;
  schema?: JsonSchema;
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
  /** Request headers the handler reads (documented only). */
  headers?: { name: string; description: string; schema: JsonSchema }[];
  responses: Record<number, RouteResponse>;
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
