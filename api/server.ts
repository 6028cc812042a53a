/**
 * The API's HTTP server: Node's own deadlines for a request's arrival and for an idle kept-alive connection, set
 * from the configuration (`HTTP_*` variables). What a request body and a streamed answer may do once Koa has them
 * is bounded in `middleware/json-body.ts` (a stalled or too slow body) and `assets.ts` (a stalled reader).
 */
import http from 'node:http';
import type { Config } from '../src/config';

export type HttpTimeouts = Pick<Config, 'httpHeadersTimeoutSeconds' | 'httpRequestTimeoutSeconds' | 'httpKeepAliveTimeoutSeconds'>;

/**
 * How often Node looks for requests past `headersTimeout` or `requestTimeout` (its default, 30 s, would let a
 * slowloris client stay up to 30 s past the deadline). The check walks only the connections with a request still
 * arriving, so once a second costs nothing.
 */
export function connectionsCheckingIntervalMs(timeouts: HttpTimeouts): number {
  return Math.max(10, Math.min(1000, Math.floor((timeouts.httpHeadersTimeoutSeconds * 1000) / 4)));
}

/**
 * A server (for `listener`, or one attached later) in which:
 * - the request line and headers must arrive within `httpHeadersTimeoutSeconds` of their first byte;
 * - the whole request (headers and body) within `httpRequestTimeoutSeconds`;
 * past either, Node answers `408 Request Timeout` with `Connection: close` (no body: the request was never
 * complete, so no route has it) and closes the connection;
 * - a kept-alive connection with no request for `httpKeepAliveTimeoutSeconds` is closed (after Node's 1 s of
 *   grace), longer than the 60 s idle timeout of the usual load balancers, so that they never reuse a connection
 *   this side is closing.
 * The time the service takes to answer is not bounded here: a request whose body has arrived may wait for Gemini.
 */
export function createApiServer(timeouts: HttpTimeouts, listener?: http.RequestListener): http.Server {
  const server = http.createServer({
    headersTimeout: Math.round(timeouts.httpHeadersTimeoutSeconds * 1000),
    requestTimeout: Math.round(timeouts.httpRequestTimeoutSeconds * 1000),
    keepAliveTimeout: Math.round(timeouts.httpKeepAliveTimeoutSeconds * 1000),
    connectionsCheckingInterval: connectionsCheckingIntervalMs(timeouts),
  });
  if (listener) server.on('request', listener);
  return server;
}
