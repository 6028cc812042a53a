/** The rules a webhook URL must meet, for a registered webhook's `url` and a request's ad-hoc `webhook_url` alike. */
import { ValidationFailed } from '../errors';
import { type OutboundPolicy, OutboundRefused } from '../net/outbound';

/** The parsed URL when the outbound policy allows it and its host resolves to allowed addresses; else 422 naming `field`. */
export async function checkWebhookUrl(outbound: OutboundPolicy, raw: string, field: string): Promise<URL> {
  try {
    const url = outbound.checkUrl(raw);
    await outbound.checkResolves(url);
    return url;
  } catch (err) {
    if (err instanceof OutboundRefused) throw new ValidationFailed([{ loc: ['body', field], msg: `The URL ${err.message}`, type: 'url' }]);
    throw err;
  }
}
