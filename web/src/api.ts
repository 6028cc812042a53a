/**
 * The dashboard's calls to its own routes (`/dashboard/api`): JSON in and out, the session cookie sent by the
 * browser, and the session's CSRF token sent back on every call that changes something.
 */
export const API = '/dashboard/api';

export interface User { id: number; email: string; role: 'owner' | 'member'; account_id: number }
export interface Session { user: User; csrf_token: string }

/** An answer other than 2xx: the contract's `detail.error` (or `validation` for a 422), and a message to show. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

let csrfToken: string | undefined;

/** The window event of a call answered `401 not_signed_in`. */
export const SIGNED_OUT = 'dashboard:signed-out';

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const response = await fetch(`${API}${path}`, {
    method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const data = await response.json().catch(() => undefined);
  if (!response.ok) {
    const detail = data?.detail;
    // The session ended (elsewhere, or it expired): back to the sign-in page, whatever page asked.
    if (response.status === 401 && detail?.error === 'not_signed_in') window.dispatchEvent(new Event(SIGNED_OUT));
    if (Array.isArray(detail)) throw new ApiError(response.status, 'validation', detail.map((d: { msg: string }) => d.msg).join('; '));
    throw new ApiError(response.status, detail?.error ?? 'error', detail?.message ?? `The service answered ${response.status}`);
  }
  if (typeof data?.csrf_token === 'string') csrfToken = data.csrf_token;
  return data as T;
}

export function forgetSession(): void {
  csrfToken = undefined;
}

/** A date as the reader's locale writes it (or a dash). */
export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}
