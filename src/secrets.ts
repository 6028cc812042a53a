/**
 * Service secrets: a configured value, or a random one kept in the data folder (so restarts and the processes of
 * one machine agree), and a small authenticated-encryption box for secrets stored in Postgres.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const MIN_SECRET_LENGTH = 32;
/** Words of the placeholders that ship in examples and compose files ("change-me-...", "my-secret"). */
const PLACEHOLDER_WORDS = ['changeme', 'secret', 'password', 'passwd', 'example', 'default', 'placeholder', 'replaceme'];

/** Why `value` is not fit to be a service secret (too short, a placeholder, too few distinct characters), if it is not. */
export function secretWeakness(value: string): string | undefined {
  if (value.length < MIN_SECRET_LENGTH) return `is shorter than ${MIN_SECRET_LENGTH} characters`;
  const letters = value.toLowerCase().replace(/[^a-z0-9]/g, '');
  const word = PLACEHOLDER_WORDS.find((w) => letters.includes(w));
  if (word) return `contains "${word}", so it looks like a placeholder`;
  if (new Set(value).size < 8) return 'has fewer than 8 distinct characters';
  return undefined;
}

/** A secret from the environment variable `name`: unset stays unset; a weak one stops the process with a clear message. */
export function configuredSecret(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const weakness = secretWeakness(value);
  if (weakness) {
    throw new Error(`${name} ${weakness}: set ${MIN_SECRET_LENGTH} or more random characters (e.g. \`openssl rand -hex 32\`), `
      + 'or leave it unset to use a random one kept in DATA_DIR');
  }
  return value;
}

/** The configured secret, else the one kept in `dataDir/name` (generated on first use); a weak kept one is refused. */
export function loadSecret(configured: string | undefined, dataDir: string, name: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, name);
  if (!existsSync(file)) createSecretFile(file);
  const secret = readFileSync(file, 'utf8').trim();
  const weakness = secretWeakness(secret);
  if (weakness) throw new Error(`the secret in ${file} ${weakness}: put ${MIN_SECRET_LENGTH} or more random characters in it`);
  return secret;
}

/**
 * Writes a random secret to `file` unless it exists: written aside, then hard-linked into place, so a reader never
 * sees it half written and processes starting together (API and worker on one volume) all keep the first one.
 */
function createSecretFile(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(draft, randomBytes(32).toString('hex'), { mode: 0o600 });
  try {
    linkSync(draft, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // else another process linked its own first
  } finally {
    unlinkSync(draft);
  }
}

/** AES-256-GCM with a key derived from a service secret: `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
export class SecretBox {
  private readonly key: Buffer;
  private readonly namesKey: Buffer;

  constructor(secret: string) {
    this.key = createHash('sha256').update(`secret-box\n${secret}`).digest();
    this.namesKey = createHash('sha256').update(`secret-names\n${secret}`).digest();
  }

  /**
   * 128 bits (32 hex digits) that only a holder of the service secret can compute from `label`: the same label
   * gives the same name on every process, and a name tells nothing of another's.
   */
  nameFor(label: string): string {
    return createHmac('sha256', this.namesKey).update(label).digest('hex').slice(0, 32);
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1') throw new Error('unknown sealed secret version');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}
