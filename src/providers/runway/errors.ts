/**
 * Runway's failures as ProviderErrors, in one place: HTTP answers and transport errors of the SDK, the failure codes
 * of a FAILED task, and the download of its output. `retryable` tells an outage (try again later) from a refusal
 * that would fail the same way again; the code is what a v2 job shows as `error_code`.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError } from '@runwayml/sdk';
import { OutboundRefused, OutboundTooLarge } from '../../net/outbound';
import { log } from '../../log';
import { ProviderError } from '../provider';

/** Worth another try: rate limits, timeouts and outages (Runway's own guidance names 429, 502, 503 and 504). */
const isRetryableStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500;

function statusCode(status: number): string {
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404) return 'not_found';
  if (status >= 500 || status === 408) return 'unavailable';
  return 'refused';
}

/** Runway's own words from an error body (`{"error": "..."}`), else the SDK's message. */
function runwayMessage(err: APIError): string {
  const said = (err.error as { error?: unknown } | undefined)?.error;
  return typeof said === 'string' ? said : err.message;
}

/** A failed SDK request (`what` says which: "submit", "poll", "cancel"). */
export function requestError(err: unknown, what: string): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof APIConnectionTimeoutError) return new ProviderError(`Runway ${what}: no answer in time`, 'timeout', true);
  // Transport details (addresses, proxies) go to the log; the integrator reads only what happened.
  if (err instanceof APIConnectionError) {
    log.warn('Runway could not be reached', { request: what, error: String((err.cause as Error | undefined)?.message ?? err.message) });
    return new ProviderError(`Runway ${what}: cannot reach Runway`, 'unavailable', true);
  }
  if (err instanceof APIError && err.status !== undefined) {
    return new ProviderError(`Runway ${what} answered HTTP ${err.status}: ${runwayMessage(err)}`, statusCode(err.status), isRetryableStatus(err.status));
  }
  log.warn('a Runway request failed', { request: what, error: String((err as Error)?.message ?? err) });
  return new ProviderError(`Runway ${what} failed`, 'unavailable', true);
}

/**
 * A task that ended FAILED (docs: api-details/task-failures). Content-policy refusals are permanent; Runway's own
 * transient failures may succeed on a new submit (the workflow bounds how many).
 */
export function taskFailure(failureCode: string | undefined, failure: string): ProviderError {
  const code = failureCode ?? 'unknown';
  const message = `Runway could not render the video (${code}): ${failure}`;
  // The task is over in every case: a retry must submit a new one (`taskEnded`).
  if (code.startsWith('SAFETY.') || code === 'INPUT_PREPROCESSING.SAFETY.TEXT') return new ProviderError(message, 'safety', false, true);
  if (code.startsWith('INTERNAL.BAD_OUTPUT.')) return new ProviderError(message, 'bad_output', true, true);
  if (code === 'INPUT_PREPROCESSING.INTERNAL') return new ProviderError(message, 'task_failed', true, true);
  return new ProviderError(message, 'task_failed', false, true);
}

export const taskCancelled = (taskId: string): ProviderError =>
  new ProviderError(`The Runway task ${taskId} was cancelled`, 'cancelled', false, true);

/**
 * The download of a finished task's output. A refused address or an oversized file will not change on a retry;
 * a timeout or an error answer may (the next poll downloads again).
 */
export function downloadError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  const reason = (err as Error)?.message ?? String(err);
  if (err instanceof OutboundRefused) return new ProviderError(`Runway's output URL ${reason}`, 'download_refused', false);
  if (err instanceof OutboundTooLarge) return new ProviderError(`Runway's output ${reason}`, 'output_too_large', false);
  return new ProviderError(`Runway's output could not be downloaded: ${reason}`, 'download_failed', true);
}

/** The task succeeded but its output is unusable: a retry submits a new task. */
export const badOutput = (reason: string): ProviderError =>
  new ProviderError(`Runway's output is not usable: ${reason}`, 'bad_output', true, true);
