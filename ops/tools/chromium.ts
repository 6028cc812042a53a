/**
 * The browser of the dashboard's browser tests: Debian's Chromium (`/usr/bin/chromium`, or `CHROMIUM_PATH`), driven
 * through playwright-core, which downloads no browser. When it is missing and this runs as root on Debian, it is
 * installed with apt (once; a few minutes); otherwise the error says what to install.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { log } from '../../src/log';

const run = promisify(execFile);
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export function chromiumPath(): string {
  return process.env.CHROMIUM_PATH || DEBIAN_CHROMIUM;
}

export async function ensureChromium(): Promise<string> {
  const browser = chromiumPath();
  if (existsSync(browser)) return browser;
  if (browser !== DEBIAN_CHROMIUM || process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`no Chromium at ${browser}: install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH`);
  }
  log.info('installing Chromium with apt-get (once, for the dashboard\'s browser tests)');
  const apt = (...args: string[]) => run('apt-get', args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 64 * 1024 * 1024 });
  try {
    await apt('install', '-y', '--no-install-recommends', 'chromium');
  } catch {
    await apt('update'); // a fresh machine's package lists may be missing or stale
    await apt('install', '-y', '--no-install-recommends', 'chromium');
  }
  if (!existsSync(browser)) throw new Error(`apt-get installed chromium, but ${browser} is missing`);
  return browser;
}
