/**
 * Signed asset URLs: `<base>/assets/<key>?expires=<epoch s>&signature=<hex HMAC-SHA256>`. The signature covers
 * the key and the expiry, so neither can be changed (a URL cannot be forged or extended) without the secret; and an
 * expiry further ahead than we ever sign is refused, so even a leaked secret cannot mint a link that never ends.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const RESULT_URL_TTL_SECONDS = 30 * 24 * 3600;
/** Clock difference between API processes that a fresh URL may carry (one signs, another verifies). */
const CLOCK_SLACK_SECONDS = 300;

export class UrlSigner {
  constructor(private readonly secret: string, private readonly baseUrl: string) {}

  private sign(key: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${key}\n${expires}`).digest('hex');
  }

  /** An absolute URL for `key`, valid for `ttlSeconds` from `now`. */
  url(key: string, ttlSeconds = RESULT_URL_TTL_SECONDS, now = new Date()): { url: string; expiresAt: Date } {
    if (ttlSeconds > RESULT_URL_TTL_SECONDS) throw new Error(`signed URLs live at most ${RESULT_URL_TTL_SECONDS} s`);
    const expires = Math.floor(now.getTime() / 1000) + ttlSeconds;
    const url = `${this.baseUrl}/assets/${key}?expires=${expires}&signature=${this.sign(key, expires)}`;
    return { url, expiresAt: new Date(expires * 1000) };
  }

  verify(key: string, expires: string | undefined, signature: string | undefined, now = new Date()): 'ok' | 'expired' | 'invalid' {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return 'invalid';
    if (Number(expires) > now.getTime() / 1000 + RESULT_URL_TTL_SECONDS + CLOCK_SLACK_SECONDS) return 'invalid';
    const expected = Buffer.from(this.sign(key, Number(expires)), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return 'invalid';
    return Number(expires) * 1000 < now.getTime() ? 'expired' : 'ok';
  }
}
