/**
 * Passwords: argon2id through `@node-rs/argon2` (OWASP's parameters: 19 MiB, 2 passes, one lane), hashed and
 * verified off the event loop by the binding's own threads. At most PASSWORD_WORK_AT_ONCE run at once and
 * PASSWORD_WORK_QUEUE wait, so that a flood of sign-ins (which anyone may send) cannot take every thread and all the
 * memory; past that, PasswordWorkBusy (the API answers 503 with Retry-After).
 */
import { hash, verify } from '@node-rs/argon2';
import { newToken } from './secret-tokens';

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;
const PASSWORD_WORK_AT_ONCE = 2;
const PASSWORD_WORK_QUEUE = 64;

/** argon2id; the binding's `Algorithm.Argon2id` is a const enum, which isolated modules cannot inline. */
const ARGON2ID = 2;
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export class PasswordWorkBusy extends Error {}

let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  if (running >= PASSWORD_WORK_AT_ONCE) {
    if (waiting.length >= PASSWORD_WORK_QUEUE) throw new PasswordWorkBusy('Too many password checks at once; try again in a moment');
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    running++;
  }
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next(); // the slot passes on
    else running--;
  }
}

export function hashPassword(password: string): Promise<string> {
  return limited(() => hash(password, OPTIONS));
}

/**
 * A hash of nothing anyone knows, verified when the email has no user (or no password yet), so that a sign-in
 * takes as long whether or not the email exists.
 */
let decoy: Promise<string> | undefined;

function decoyHash(): Promise<string> {
  decoy ??= hash(newToken(), OPTIONS).catch((err: unknown) => {
    decoy = undefined; // made again next time, never a rejection kept
    throw err;
  });
  return decoy;
}

/** Whether `password` is the one of `stored`; with no stored hash, a decoy verification of the same cost, then false. */
export async function passwordMatches(stored: string | null | undefined, password: string): Promise<boolean> {
  const against = stored ?? await decoyHash();
  const matches = await limited(() => verify(against, password).catch(() => false));
  return Boolean(stored) && matches;
}
