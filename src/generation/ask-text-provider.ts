/**
 * One synchronous call of the text provider (analysis and the helpers): bounded by a deadline, so a request (and
 * a helper call's reservation) always ends, and any failure answered as 500 with the endpoint's `*_failed` code.
 */
import { findCategory } from './catalogue';
import type { Locale } from '../locale';
import { ProductAnalysis, ProviderError, type TextProvider } from '../providers/provider';
import { log } from '../log';
import { AppError } from '../errors';

/** How long a caller waits for the text provider; helper reservations outlive it by far (HELPER_RESERVATION_TTL_SECONDS). */
export const TEXT_CALL_DEADLINE_MS = 60_000;

/** The provider's own message for a ProviderError; anything else is logged and answered without its details. */
export async function askTextProvider<T>(failedCode: string, ask: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const signal = AbortSignal.timeout(TEXT_CALL_DEADLINE_MS);
  const deadline = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(new ProviderError(`no answer within ${TEXT_CALL_DEADLINE_MS / 1000} s`, 'timeout', true)), { once: true });
  });
  deadline.catch(() => undefined); // the race below may be won by the answer
  try {
    return await Promise.race([ask(signal), deadline]);
  } catch (err) {
    throw textProviderFailed(failedCode, err);
  }
}

export function textProviderFailed(failedCode: string, err: unknown): AppError {
  if (err instanceof ProviderError) {
    log.warn('the text provider failed', { code: failedCode, providerCode: err.code, error: err.message });
    return new AppError(500, failedCode, `The text provider failed: ${err.message}`);
  }
  log.error('the text provider failed unexpectedly', { code: failedCode, error: (err as Error)?.stack ?? String(err) });
  return new AppError(500, failedCode, 'The text provider failed unexpectedly');
}

/**
 * The product analysis of `/analyze` and of generation requests that leave fields out, held to the contract
 * whatever the provider said: a catalogue category, a name, a list of qualities (else 500 `analysis_failed`).
 */
export async function analyzeProduct(text: TextProvider, images: Buffer[], locale: Locale): Promise<ProductAnalysis> {
  const analysis = await askTextProvider('analysis_failed', (signal) => text.analyze(images, locale, signal));
  const { category_id: categoryId, product_name: productName, qualities } = analysis ?? {};
  if (!findCategory(categoryId) || typeof productName !== 'string' || !productName.trim()
    || !Array.isArray(qualities) || !qualities.every((q) => typeof q === 'string')) {
    log.warn('the text provider answered an analysis outside the contract', { analysis });
    throw new AppError(500, 'analysis_failed', 'The text provider answered an analysis outside the catalogue or the contract');
  }
  return { category_id: categoryId, product_name: productName, qualities };
}
