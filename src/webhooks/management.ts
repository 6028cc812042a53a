/**
 * What an account does with its registered webhooks, for the public API and the dashboard alike: register one (its
 * secret answered once), switch it on or off, delete it, read its delivery log and send a delivery again. Each takes
 * the account it acts for: a webhook of another account is `forbidden` (the contract's 403), an unknown one
 * `not_found`. The statements are store.ts's.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { AppError, forbidden, notFound, ValidationFailed } from '../errors';
import type { Services } from '../services';
import { startDeliveryWorkflow } from '../temporal/starts';
import { newWebhookSecret, REGISTERED_ATTEMPTS, WEBHOOK_EVENTS } from './events';
import {
  deleteWebhook, type DeliveryRow, recentDeliveries, registerWebhook, reopenDelivery, restoreDelivery, setWebhookActive,
  webhookOwner, type WebhookRow,
} from './store';
import { checkWebhookUrl } from './urls';

type WebhookServices = Pick<Services, 'db' | 'outbound' | 'secrets' | 'temporal' | 'config'>;

/** The webhook when the account owns it; else 404 (unknown or deleted) or 403 (another account's). */
async function ownWebhook({ db }: Pick<Services, 'db'>, accountId: number, webhookId: number): Promise<void> {
  const hook = await webhookOwner(db, webhookId);
  if (!hook) throw notFound(`Webhook ${webhookId}`);
  if (hook.account_id !== accountId) throw forbidden(`Webhook ${webhookId}`);
}

/**
 * Registers a webhook: known events only (all when none are named), a URL the outbound policy allows, at most
 * MAX_WEBHOOKS per account. The secret is answered here and nowhere else; it is stored sealed.
 */
export async function registerAccountWebhook(
  { db, outbound, secrets }: WebhookServices, accountId: number, request: { url: string; events?: string[]; item_events?: boolean },
): Promise<WebhookRow & { secret: string }> {
  const unknown = (request.events ?? []).filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
  if (unknown.length > 0) {
    throw new ValidationFailed([{ loc: ['body', 'events'], msg: `Unknown event names: ${unknown.join(', ')}; known: ${WEBHOOK_EVENTS.join(', ')}`, type: 'enum' }]);
  }
  const url = await checkWebhookUrl(outbound, request.url, 'url');
  const events = request.events && request.events.length > 0 ? [...new Set(request.events)] : [...WEBHOOK_EVENTS];
  const secret = newWebhookSecret();
  const created = await registerWebhook(db, accountId, { url: url.toString(), sealedSecret: secrets.seal(secret), events, itemEvents: request.item_events ?? false });
  return { ...created, secret };
}

/** Switches a webhook on or off: off, it is planned no new delivery and its pending ones are skipped. */
export async function switchWebhook(services: WebhookServices, accountId: number, webhookId: number, active: boolean): Promise<WebhookRow> {
  await ownWebhook(services, accountId, webhookId);
  const hook = await setWebhookActive(services.db, webhookId, active);
  if (!hook) throw notFound(`Webhook ${webhookId}`); // deleted meanwhile
  return hook;
}

export async function deleteAccountWebhook(services: WebhookServices, accountId: number, webhookId: number): Promise<void> {
  await ownWebhook(services, accountId, webhookId);
  await deleteWebhook(services.db, webhookId);
}

/** A webhook's latest deliveries, newest first. */
export async function webhookDeliveries(services: WebhookServices, accountId: number, webhookId: number, limit: number): Promise<DeliveryRow[]> {
  await ownWebhook(services, accountId, webhookId);
  return recentDeliveries(services.db, webhookId, limit);
}

export const deliveryInProgress = () => new AppError(409, 'delivery_in_progress', 'The delivery is still being attempted');

/**
 * Sends a delivery again with the same delivery id: it becomes pending and a new delivery workflow makes its
 * attempts. 409 `delivery_in_progress` while it is still being attempted.
 */
export async function redeliver(services: WebhookServices, accountId: number, webhookId: number, deliveryId: string): Promise<DeliveryRow> {
  const { db, temporal, config } = services;
  await ownWebhook(services, accountId, webhookId);
  const delivery = await reopenDelivery(db, deliveryId, webhookId);
  if (delivery === 'missing') throw notFound(`Delivery ${deliveryId}`);
  if (delivery === 'in-progress') throw deliveryInProgress();
  const { previous_status: previousStatus, ...reopened } = delivery;
  try {
    await startDeliveryWorkflow(temporal, config.taskQueue, {
      deliveryId: delivery.id, actionId: delivery.action_id, event: delivery.event, maxAttempts: REGISTERED_ATTEMPTS,
      retryInitialMs: config.webhookRetryInitialMs, summary: `${delivery.event} → registered webhook (redelivery)`,
    });
  } catch (err) {
    // Not started: the delivery goes back to how it was (else it would look pending beside a closed run).
    await restoreDelivery(db, delivery.id, previousStatus);
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    // The last attempt's workflow has recorded its outcome but not closed yet: as good as in progress.
    throw deliveryInProgress();
  }
  return reopened;
}
