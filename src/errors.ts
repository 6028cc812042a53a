/**
 * The API's errors: a status, the contract's `error` code, a message, optional details. The error middleware
 * turns them into `{detail: {error, message, details}}`.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    /** Response headers that go with the error (`Retry-After` of a 503). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new AppError(400, 'invalid_request', message, details);
export const unsupportedParameter = (message: string) => new AppError(400, 'unsupported_parameter', message);
export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);
export const forbidden = (what: string) => new AppError(403, 'forbidden', `${what} belongs to another account`);
export const imageTooLarge = (message: string) => new AppError(413, 'image_too_large', message);
export const insufficientTokens = (available: number, required: number) =>
  new AppError(402, 'insufficient_tokens', `Not enough sparks: ${available} available, ${required} required`, { available, required });

/** The API key's monthly spend limit would be passed (`limit`, what the key `spent` this month, what is `required`). */
export const spendLimitExceeded = (limit: number, spent: number, required: number) =>
  new AppError(402, 'spend_limit_exceeded', `This API key's monthly spend limit is ${limit} sparks; ${spent} are held or charged this month (UTC), ${required} more required`,
    { limit, spent, required });
export const generationUnavailable = (message = 'Generation is temporarily unavailable, try again shortly', retryAfterSeconds?: number) =>
  new AppError(503, 'generation_unavailable', message, undefined, retryAfterSeconds ? { 'Retry-After': String(retryAfterSeconds) } : undefined);

/** One AJV error in the 422 `detail` array: where (`loc`), what (`msg`), and the failed keyword (`type`). */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class ValidationFailed extends Error {
  constructor(readonly issues: ValidationIssue[]) {
    super('Validation failed');
    this.name = 'ValidationFailed';
  }
}
