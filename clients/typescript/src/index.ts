/** `@product-imagery/client`: a typed client of the product imagery service, and webhook verification. */
export { createClient, type ActionStatus, type Call, type ClientOptions, type ImageryClient, type Job } from './client.js';
export { ApiError, WebhookVerificationError, type ErrorDetail } from './errors.js';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.js';
export type { components, operations, paths } from './schema.js';
export type { LiveEvent, WaitOptions } from './wait.js';
export { verifyWebhook, type VerifiedWebhook, type VerifyWebhookInput, type WebhookHeaders, type WebhookPayload } from './webhooks.js';
