/**
 * A `fetch` that tries again where that cannot do a thing twice: after 429 (the rate limit refused the request before
 * anything was done), whatever the method; after 503 or a network error, only for a request that is safe to send
 * again (GET, HEAD, or an operation that took an `Idempotency-Key`, which the retry carries unchanged): a 503 may
 * come after the work was done (a database that failed after a commit), and a lost answer says nothing.
 */

export interface RetryPolicy {
  /** Tries after the first (0: none). */
  retries: number;
  /** The backoff's base: the n-th retry waits a random time up to `baseDelayMs * 2^n` (full jitter). */
  baseDelayMs: number;
  /** The longest wait; an answer asking for longer (`Retry-After`, `X-RateLimit-Reset`) is returned as it is. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 4, baseDelayMs: 500, maxDelayMs: 30_000 };

/**
 * A request with an `Idempotency-Key` is not sent again this long after its first send: the service keeps a key for
 * five minutes, and a retry after that would be a new request.
 */
export const KEYED_RETRY_WINDOW_MS = 240_000;

/**
 * How long to wait before retry `attempt` (0-based) after `response` (none: a network error): what the answer asks
 * for (`Retry-After` in seconds or as a date, or the rate limit window's `X-RateLimit-Reset` in epoch seconds) plus
 * a little jitter so that many clients do not come back at once, else full jitter; `undefined` when the answer asks
 * for more than `maxDelayMs`.
 */
export function retryDelay(attempt: number, response: Response | undefined, policy: RetryPolicy, now = Date.now(), random = Math.random): number | undefined {
  const asked = response ? askedDelay(response.headers, now) : undefined;
  if (asked !== undefined) return asked > policy.maxDelayMs ? undefined : asked + random() * Math.min(policy.baseDelayMs, policy.maxDelayMs - asked);
  return random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
}

function askedDelay(headers: Headers, now: number): number | undefined {
  const retryAfter = headers.get('retry-after')?.trim();
  if (retryAfter) {
    const seconds = /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : Date.parse(retryAfter) - now;
    if (Number.isFinite(seconds)) return Math.max(0, seconds);
  }
  const reset = headers.get('x-ratelimit-reset')?.trim();
  if (reset && /^\d+$/.test(reset)) return Math.max(0, Number(reset) * 1000 - now);
  return undefined;
}

/** `base` with retries by `policy`; `resendable(request)` says whether a request may be sent again after a 503 or a network error. */
export function retryingFetch(base: typeof fetch, policy: RetryPolicy, resendable: (request: Request) => boolean): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const firstSent = Date.now();
    const keyed = request.headers.has('Idempotency-Key');
    for (let attempt = 0; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await base(request.clone());
      } catch (err) {
        if (request.signal.aborted) throw err;
        failure = err;
      }
      const again = response?.status === 429 || ((!response || response.status === 503) && resendable(request));
      let delay = again && attempt < policy.retries ? retryDelay(attempt, response, policy) : undefined;
      if (delay !== undefined && keyed && Date.now() + delay - firstSent > KEYED_RETRY_WINDOW_MS) delay = undefined;
      if (delay === undefined) {
        if (response) return response;
        throw failure;
      }
      await response?.body?.cancel();
      await sleep(delay, request.signal);
    }
  };
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
