/**
 * A browser's worth of the dashboard for HTTP tests: one cookie jar (the session cookie), the dashboard's Origin on
 * every request, and the session's CSRF token sent back once it is known, as the dashboard's page does.
 */
import type { DataSource } from 'typeorm';
import { inviteUser, type Role } from '../../src/users/users';
import { type ApiResponse, newAccount } from './fixtures';

export const DASHBOARD_API = '/dashboard/api';

export interface DashboardBrowser {
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  /** The session cookie's value now (undefined when none). */
  cookie(): string | undefined;
  setCookie(value: string | undefined): void;
  csrfToken: string | undefined;
}

export function dashboardBrowser(baseUrl: string): DashboardBrowser {
  let session: string | undefined;
  const browser: DashboardBrowser = {
    csrfToken: undefined,
    cookie: () => session,
    setCookie: (value) => { session = value; },
    async call(method, path, body, headers = {}) {
      const response = await fetch(`${baseUrl}${DASHBOARD_API}${path}`, {
        method,
        redirect: 'manual',
        headers: {
          Origin: baseUrl,
          ...(session ? { Cookie: `imagery_session=${session}` } : {}),
          ...(browser.csrfToken ? { 'X-CSRF-Token': browser.csrfToken } : {}),
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      for (const line of response.headers.getSetCookie()) {
        const match = /^imagery_session=([^;]*)/.exec(line);
        if (match) session = match[1] || undefined;
      }
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON
      }
      const answer = { status: response.status, headers: response.headers, body: parsed as any };
      if (answer.status === 200 && typeof answer.body?.csrf_token === 'string') browser.csrfToken = answer.body.csrf_token;
      return answer;
    },
  };
  return browser;
}

export const TEST_PASSWORD = 'correct horse battery staple';

/** An account with a user of `role` who has set `password` through the invitation link, signed in. */
export async function signedInUser(
  baseUrl: string, db: DataSource, options: { accountId?: number; role?: Role; email?: string; password?: string } = {},
): Promise<{ browser: DashboardBrowser; accountId: number; userId: number; email: string; apiKey?: string }> {
  const account = options.accountId === undefined ? await newAccount(db, 100) : undefined;
  const accountId = options.accountId ?? account!.accountId;
  const email = options.email ?? `user-${Math.random().toString(36).slice(2)}@example.com`;
  const invited = await inviteUser(db, { accountId, email, role: options.role ?? 'owner' });
  if (invited === 'taken') throw new Error(`${email} is taken`);
  const browser = dashboardBrowser(baseUrl);
  const redeemed = await browser.call('POST', '/links/redeem', { token: invited.token, password: options.password ?? TEST_PASSWORD });
  if (redeemed.status !== 200) throw new Error(`redeem: ${redeemed.status} ${JSON.stringify(redeemed.body)}`);
  return { browser, accountId, userId: invited.userId, email, apiKey: account?.apiKey };
}

/** What a signed-in dashboard page sends with a request that changes something: its Origin, cookie and CSRF token. */
export function dashboardHeaders(baseUrl: string, browser: DashboardBrowser): Record<string, string> {
  return { Origin: baseUrl, Cookie: `imagery_session=${browser.cookie()}`, 'X-CSRF-Token': browser.csrfToken! };
}
