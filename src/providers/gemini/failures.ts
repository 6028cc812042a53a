/**
 * Every way a Gemini call can fail, mapped onto ProviderError in this one place: which failures pass (retried by
 * Temporal), which are final, and the message the integrator reads as `error_message`.
 */
import { ApiError, type GenerateContentResponse } from '@google/genai';
import { log } from '../../log';
import { ProviderError } from '../provider';

/** Finish reasons that mean the model refused on content grounds: asking again gives the same answer. */
const SAFETY_FINISH_REASONS = new Set([
  'SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION',
]);

/** Codes of answers that came back but are unusable (no image, malformed text): the adapter asks once more itself. */
export const ASKED_TWICE = new Set(['no_image', 'bad_answer']);

/** HTTP statuses whose retry is Temporal's business; the code says why. */
const PASSING: Record<number, string> = { 408: 'timeout', 429: 'rate_limited', 500: 'internal_error', 502: 'unavailable', 503: 'unavailable', 504: 'timeout' };

/** Final HTTP statuses (a retry would be refused the same way); other 4xx are `refused` too. */
const FINAL: Record<number, string> = { 400: 'invalid_request', 401: 'refused', 402: 'refused', 403: 'refused', 404: 'model_not_found' };

/** Google's error body, `{"error": {"code", "message", "status"}}`, which the SDK puts in ApiError.message as JSON. */
function googleError(err: ApiError): { message: string; status?: string } {
  try {
    const body = JSON.parse(err.message) as { error?: { message?: unknown; status?: unknown } };
    const message = typeof body.error?.message === 'string' && body.error.message ? body.error.message : err.message;
    return { message, status: typeof body.error?.status === 'string' ? body.error.status : undefined };
  } catch {
    return { message: err.message };
  }
}

/**
 * A thrown error of a Gemini call as a ProviderError. The caller's own abort (a cancelled activity) is passed on as
 * it is; anything unknown too, so a bug is not disguised as an outage.
 */
export function wireFailure(err: unknown, signal: AbortSignal | undefined, timeoutMs: number): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof ApiError) {
    const { message, status } = googleError(err);
    const said = `Gemini answered ${err.status}${status ? ` ${status}` : ''}: ${message}`;
    if (PASSING[err.status] || err.status >= 500) return new ProviderError(said, PASSING[err.status] ?? 'unavailable', true);
    return new ProviderError(said, FINAL[err.status] ?? 'refused', false);
  }
  const name = (err as Error | undefined)?.name;
  if (name === 'AbortError' || name === 'TimeoutError') {
    return new ProviderError(`Gemini did not answer within ${timeoutMs} ms`, 'timeout', true);
  }
  if (err instanceof TypeError && /fetch failed|terminated|network/i.test(err.message)) {
    const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
    // The error code only: the cause's text can name internal addresses (a proxy); it goes to the log.
    log.warn('Gemini could not be reached', { error: cause?.message ?? err.message });
    return new ProviderError(`Gemini could not be reached${cause?.code ? ` (${cause.code})` : ''}`, 'network_error', true);
  }
  if (err instanceof SyntaxError) return badAnswer(`Gemini's answer is not JSON: ${err.message}`); // a 200 body the SDK cannot parse
  return err;
}

/** A prompt block or a safety stop in a 200 answer: final, with Gemini's reason in the message. */
export function contentRefusal(response: GenerateContentResponse): ProviderError | undefined {
  const feedback = response.promptFeedback;
  if (feedback?.blockReason) {
    const why = feedback.blockReasonMessage ? `: ${feedback.blockReasonMessage}` : '';
    return new ProviderError(`Gemini refused the request (blockReason ${feedback.blockReason})${why}`, 'blocked', false);
  }
  const candidate = response.candidates?.[0];
  if (candidate?.finishReason && SAFETY_FINISH_REASONS.has(candidate.finishReason)) {
    const why = candidate.finishMessage ? `: ${candidate.finishMessage}` : '';
    return new ProviderError(`Gemini stopped on content grounds (finishReason ${candidate.finishReason})${why}`, 'blocked', false);
  }
  return undefined;
}

/** An answer without an image (NO_IMAGE, IMAGE_OTHER, or text only). Final once the adapter has asked twice. */
export function noImage(response: GenerateContentResponse, said: string): ProviderError {
  const reason = response.candidates?.[0]?.finishReason ?? 'none';
  const text = said ? `; it said: ${said.slice(0, 300)}` : '';
  return new ProviderError(`Gemini answered without an image (finishReason ${reason})${text}`, 'no_image', false);
}

/** A text answer that is not what was asked for. Final once the adapter has asked twice. */
export function badAnswer(why: string): ProviderError {
  return new ProviderError(why, 'bad_answer', false);
}
