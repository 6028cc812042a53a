/**
 * Signed asset URLs: `<base>/assets/<key>?expires=<epoch s>&signature=<hex HMAC-SHA256>`. The signature covers
 * the key and the expiry, so neither can be changed (a URL cannot be forged or extended) without the secret.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const RESULT_URL_TTL_SECONDS = 30 * 24 * 3600;

export class UrlSigner {
  constructor(private readonly secret: string, private readonly baseUrl: string) {}

  private sign(key: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${key}\n${expires}`).digest('hex');
  }

  /** An absolute URL for `key`, valid for `ttlSeconds` from `now`. */
  url(key: string, ttlSeconds = RESULT_URL_TTL_SECONDS, now = new Date()): { url: string; expiresAt: Date } {
    const expires = Math.floor(now.getTime() / 1000) + ttlSeconds;
    const url = `${this.baseUrl}/assets/${key}?expires=${expires}&signature=${this.sign(key, expires)}`;
    return { url, expiresAt: new Date(expires * 1000) };
  }

  verify(key: string, expires: string | undefined, signature: string | undefined, now = new Date()): 'ok' | 'expired' | 'invalid' {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return 'invalid';
    const expected = Buffer.from(this.sign(key, Number(expires)), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return 'invalid';
    return Number(expires) * 1000 < now.getTime() ? 'expired' : 'ok';
  }
}

/** The configured secret, or a random one kept in the data folder so URLs survive restarts. */
export function loadSigningSecret(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'asset-signing-secret');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const secret = randomBytes(32).toString('hex');
    try {
      writeFileSync(file, secret, { flag: 'wx', mode: 0o600 });
      return secret;
    } catch {
      return readFileSync(file, 'utf8').trim(); // another process wrote it first
    }
  }
}
