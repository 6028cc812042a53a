/** The errors the client throws: the service's answers that are not 2xx, and webhooks that fail verification. */

/** The `detail` of an error answer: `{error, message, details?}`, or the list of a validation failure (422). */
export type ErrorDetail = { error: string; message: string; details?: Record<string, unknown> } | Record<string, unknown>[];

/**
 * An answer that is not 2xx. `code` is the contract's `detail.error` (branch on it, never on `message`):
 * `insufficient_tokens`, `not_found`, `rate_limit_exceeded`, ...; a validation failure (422, `detail` a list) is
 * `invalid_request` with the list in `details`; an unexpected failure without a `detail` (500) is `internal_error`.
 * `requestId` is the answer's `X-Request-Id`: quote it when you report a problem.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> | Record<string, unknown>[] | undefined,
    readonly requestId: string | undefined,
    /** The answer's body as sent (parsed JSON, or the text when it was not JSON). */
    readonly body: unknown,
  ) {
    super(`${status} ${code}: ${message}${requestId ? ` (request ${requestId})` : ''}`);
  }

  /** The error of a non-2xx `response` whose body was read as `body`. */
  static of(response: Response, body: unknown): ApiError {
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const detail = (body as { detail?: ErrorDetail } | null)?.detail;
    if (Array.isArray(detail)) return new ApiError(response.status, 'invalid_request', 'validation failed', detail, requestId, body);
    if (detail && typeof detail.error === 'string') {
      return new ApiError(response.status, detail.error, String(detail.message ?? detail.error), detail.details as Record<string, unknown> | undefined, requestId, body);
    }
    const code = response.status >= 500 ? 'internal_error' : `http_${response.status}`;
    const rootError = (body as { error?: unknown } | null)?.error;
    return new ApiError(response.status, code, typeof rootError === 'string' ? rootError : response.statusText || code, undefined, requestId, body);
  }
}

/** A webhook delivery that is not proved to come from the service: reject it (answer 400 or 401). */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}
