/**
 * The client: every endpoint of the service's OpenAPI document, typed (openapi-fetch over the generated `paths`),
 * with an API key, an `Idempotency-Key` per logical call of the operations that take one (the same on each of its
 * retries), retries of 429, 503 and network errors, typed errors, and `wait` for an action or a job to end.
 */
import createFetchClient, { type Client as RawClient, type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import type { HttpMethod, MediaType, PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers';
import { ApiError } from './errors.js';
import { IDEMPOTENT_OPERATIONS } from './idempotent.js';
import { DEFAULT_RETRY, retryingFetch, type RetryPolicy } from './retry.js';
import type { paths } from './schema.js';
import { waitFor, type WaitOptions } from './wait.js';

export interface ClientOptions {
  /** The service's base URL, e.g. `https://imagery.example.com` (the paths carry `/api/v1/public` or `/api/v2`). */
  baseUrl: string;
  /** An API key (`ak_...`). */
  apiKey: string;
  /** Retries of 429, 503 and network errors (default: 4, from 0.5 s, at most 30 s apart). */
  retry?: Partial<RetryPolicy>;
  /** A `fetch` of your own (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

// openapi-fetch's own helper: the init argument is optional when the operation needs no parameters or body.
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/** A typed call of one method: the success body, or an `ApiError` thrown. */
export type Call<M extends HttpMethod> = <Path extends PathsWithMethod<paths, M>, Init extends MaybeOptionalInit<paths[Path], M>>(
  url: Path, ...init: InitParam<Init>
) => Promise<Exclude<FetchResponse<Extract<paths[Path][M], Record<string | number, unknown>>, Init, MediaType>['data'], undefined>>;

type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : never;
/** `GET /api/v1/public/status/{action_id}`'s answer. */
export type ActionStatus = JsonOf<paths['/api/v1/public/status/{action_id}']['get']['responses'][200]>;
/** `GET /api/v2/jobs/{job_id}`'s answer. */
export type Job = JsonOf<paths['/api/v2/jobs/{job_id}']['get']['responses'][200]>;

export interface ImageryClient {
  get: Call<'get'>;
  post: Call<'post'>;
  put: Call<'put'>;
  patch: Call<'patch'>;
  delete: Call<'delete'>;
  /** openapi-fetch's client underneath (answers `{data, error, response}` instead of throwing), with the same key and retries. */
  raw: RawClient<paths>;
  /** Until the v1 action ends (`completed`, `failed`, `cancelled`): its status then. */
  wait(actionId: number, options?: WaitOptions): Promise<ActionStatus>;
  /** Until the v2 job ends (`succeeded`, `failed`, `dead_letter`, `cancelled`): the job then. */
  wait(jobId: string, options?: WaitOptions): Promise<Job>;
}

const V1_FINALS: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
const V2_FINALS: ReadonlySet<string> = new Set(['succeeded', 'failed', 'dead_letter', 'cancelled']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function createClient(options: ClientOptions): ImageryClient {
  // The key goes in a header: a character a header cannot carry would otherwise surface in fetch's error message.
  if (!/^[\x21-\x7e]+$/.test(options.apiKey)) throw new TypeError('apiKey is empty or holds characters an HTTP header cannot carry');
  if (Object.keys(options.headers ?? {}).some((name) => name.toLowerCase() === 'idempotency-key')) {
    throw new TypeError('Idempotency-Key is made per call (give one to a call as its header); a key shared by every call would replay the first answer');
  }
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const basePath = new URL(baseUrl).pathname.replace(/\/+$/, '');
  const headers = { ...options.headers, Authorization: `Bearer ${options.apiKey}` };
  const idempotent = [...IDEMPOTENT_OPERATIONS].map((operation) => {
    const [method, path] = operation.split(' ');
    return { method, path: new RegExp(`^${escapeRegExp(basePath)}${path.split(/\{\w+\}/).map(escapeRegExp).join('[^/]+')}$`) };
  });
  const takesKey = (request: Request) => idempotent.some((o) => o.method === request.method && o.path.test(new URL(request.url).pathname));
  const fetch = retryingFetch(options.fetch ?? globalThis.fetch.bind(globalThis), { ...DEFAULT_RETRY, ...options.retry },
    (request) => request.method === 'GET' || request.method === 'HEAD' || (request.headers.has('Idempotency-Key') && takesKey(request)));
  const raw = createFetchClient<paths>({ baseUrl, headers, fetch });
  raw.use({
    onRequest: ({ request }) => {
      // One key per logical call: made here, before the retries, which send this very request again.
      if (takesKey(request) && !request.headers.has('Idempotency-Key')) request.headers.set('Idempotency-Key', crypto.randomUUID());
      return request;
    },
  });

  const call = <M extends HttpMethod>(method: Uppercase<M>): Call<M> => (async (url: string, init?: object) => {
    const { data, error, response } = await (raw[method as 'GET'] as (url: string, init?: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(url, init);
    if (!response.ok) throw ApiError.of(response, error);
    return data;
  }) as unknown as Call<M>;
  const get = call<'get'>('GET');

  function wait(actionId: number, waitOptions?: WaitOptions): Promise<ActionStatus>;
  function wait(jobId: string, waitOptions?: WaitOptions): Promise<Job>;
  function wait(id: number | string, waitOptions?: WaitOptions): Promise<ActionStatus | Job> {
    if (typeof id === 'number') {
      if (!Number.isSafeInteger(id) || id < 1) return Promise.reject(new TypeError(`an action id is a positive integer; got ${id}`));
      return waitFor<ActionStatus>({
        streamUrl: `${baseUrl}/api/v1/public/status/${id}/events`,
        finals: V1_FINALS,
        read: (signal) => get('/api/v1/public/status/{action_id}', { params: { path: { action_id: id } }, signal }),
        status: (answer) => answer.status,
        hint: () => undefined,
      }, fetch, headers, waitOptions);
    }
    if (!UUID.test(id)) return Promise.reject(new TypeError('a job id is a UUID'));
    return waitFor<Job>({
      streamUrl: `${baseUrl}/api/v2/jobs/${id}/events`,
      finals: V2_FINALS,
      read: (signal) => get('/api/v2/jobs/{job_id}', { params: { path: { job_id: id } }, signal }),
      status: (answer) => answer.status,
      hint: (answer) => answer.check_again_in_sec,
    }, fetch, headers, waitOptions);
  }

  return { get, post: call('POST'), put: call('PUT'), patch: call('PATCH'), delete: call('DELETE'), raw, wait };
}
