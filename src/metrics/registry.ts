/**
 * What the service counts, in one prom-client registry per process (`npm start` runs the API and the worker in one
 * process: one registry, one /metrics). Every label has a bounded set of values: route templates (never raw
 * URLs), products, provider names from configuration, statuses, failure classes; never account, action or job ids.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'imagery_' });

const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new Counter<L>({ name, help, labelNames, registers: [registry] });

export const httpRequestDuration = new Histogram<'method' | 'route' | 'status'>({
  name: 'imagery_http_request_duration_seconds',
  help: 'HTTP requests of the API by method, route template (the router\'s path, "unmatched" for none) and status',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

/** outcome: accepted (its workflow started), completed (charged), failed or cancelled (released): each once per action. */
export const actionsTotal = counter('imagery_actions_total', 'Actions by product, provider and outcome (accepted, completed, failed, cancelled), counted as the move commits', ['product', 'provider', 'outcome']);

/** outcome: accepted, then one of succeeded, failed, dead_letter, cancelled. */
export const jobsTotal = counter('imagery_jobs_total', 'v2 jobs by type and outcome (accepted, succeeded, failed, dead_letter, cancelled), counted as the move commits', ['type', 'outcome']);

export const sparksHeld = counter('imagery_sparks_held_total', 'Sparks held, by product ("helper" for paid helper blocks), counted as the hold commits', ['product']);
export const sparksCharged = counter('imagery_sparks_charged_total', 'Sparks charged (a hold settled as a charge), by product, counted as the charge commits', ['product']);
export const sparksReleased = counter('imagery_sparks_released_total', 'Sparks released (a hold settled without a charge), by product, counted as the release commits', ['product']);

export const providerCallDuration = new Histogram<'provider' | 'operation' | 'outcome' | 'failure_class'>({
  name: 'imagery_provider_call_duration_seconds',
  help: 'Provider calls by provider, operation, outcome (ok, error) and failure class (the provider error code, "internal" for other errors, "none" when ok)',
  labelNames: ['provider', 'operation', 'outcome', 'failure_class'],
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
  registers: [registry],
});

export const webhookAttempts = counter('imagery_webhook_delivery_attempts_total', 'Webhook delivery attempts by outcome (delivered, http_error, refused, unreachable)', ['outcome']);
export const webhookDeliveries = counter('imagery_webhook_deliveries_total', 'Webhook deliveries ended, by outcome (delivered, exhausted, skipped)', ['outcome']);

export const rateLimited = counter('imagery_rate_limit_refusals_total', 'Requests refused with 429 rate_limit_exceeded', []);
export const idempotentReplays = counter('imagery_idempotent_replays_total', 'Requests answered with a stored response (Idempotent-Replayed), by route template', ['route']);

/** A provider error's code as a label value: adapters use short constant codes; anything else is "other". */
export function failureClass(err: unknown): string {
  const code = (err as { name?: string; code?: unknown })?.name === 'ProviderError' ? String((err as { code: unknown }).code) : undefined;
  if (code === undefined) return 'internal';
  return /^[a-z][a-z0-9_]{0,39}$/.test(code) ? code : 'other';
}

/** Times one provider call into providerCallDuration. */
export async function timedProviderCall<T>(provider: string, operation: string, call: () => Promise<T>): Promise<T> {
  const end = providerCallDuration.startTimer({ provider, operation });
  try {
    const result = await call();
    end({ outcome: 'ok', failure_class: 'none' });
    return result;
  } catch (err) {
    end({ outcome: 'error', failure_class: failureClass(err) });
    throw err;
  }
}
