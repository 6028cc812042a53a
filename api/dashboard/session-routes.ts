/**
 * Signing in and out of the dashboard, the one-time links (an invitation or a reset sets the password), and the
 * password change. Every refusal of a sign-in reads the same whether or not the email exists.
 */
import type { Context } from 'koa';
import { AppError } from '../../src/errors';
import { createResetLink, linkUrl, redeemLink, setPassword } from '../../src/users/links';
import { giveBackAttempt, takeAttempt } from '../../src/users/password-attempts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, passwordMatches, PasswordWorkBusy } from '../../src/users/passwords';
import { endSession, endUserSessions, type StartedSession, startSession, type SessionUser } from '../../src/users/sessions';
import { signIn } from '../../src/users/sign-in';
import { passwordHashOf } from '../../src/users/users';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { afterAnswer, clearSessionCookie, clientAddress, dashboardRoute, dashboardSettings, setSessionCookie } from './session-guard';

/** Wrong current passwords a user may give to a password change per 15 minutes. */
const PASSWORD_CHANGE_ATTEMPTS = 10;
/** Reset links an email may be sent per 15 minutes, and an address may ask for. */
const RESETS_PER_EMAIL = 3;
const RESETS_PER_ADDRESS = 30;

const tooManyAttempts = (retryAfter: number) => new AppError(429, 'too_many_attempts', 'Too many attempts; try again later',
  { retry_after: retryAfter }, { 'Retry-After': String(retryAfter) });

/** Password work refused for a full queue (a flood of sign-ins): 503, try again shortly. */
async function passwordWork<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof PasswordWorkBusy) throw new AppError(503, 'busy', err.message, undefined, { 'Retry-After': '1' });
    throw err;
  }
}

const email = { type: 'string', format: 'email', minLength: 3, maxLength: 254 };
const password = { type: 'string', minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH };
/** A password given to be checked, not set: any length the form allows (a short one is simply wrong). */
const givenPassword = { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH };

const userSchema = {
  type: 'object', required: ['id', 'email', 'role', 'account_id'],
  properties: { id: { type: 'integer' }, email: { type: 'string' }, role: { type: 'string', enum: ['owner', 'member'] }, account_id: { type: 'integer' } },
};
const sessionSchema = { type: 'object', required: ['user', 'csrf_token'], properties: { user: userSchema, csrf_token: { type: 'string' } } };

export const sessionView = (user: SessionUser) => ({
  user: { id: user.userId, email: user.email, role: user.role, account_id: user.accountId },
  csrf_token: user.csrfToken,
});

export function sessionRoutes({ db, config, linkMail }: ApiServices): Route[] {
  const secure = config.publicBaseUrl.startsWith('https:');
  const settings = dashboardSettings(config);

  /** Answers a session just started as GET /session does, its cookie set (a token never seen before). */
  function signedIn(ctx: Context, session: StartedSession) {
    setSessionCookie(ctx, session.token, secure);
    ctx.body = sessionView(session.user);
  }

  return [
    dashboardRoute({
      method: 'post', path: '/sign-in', operationId: 'signIn', access: 'public', summary: 'Sign in with email and password',
      body: { type: 'object', required: ['email', 'password'], additionalProperties: false, properties: { email, password: givenPassword } },
      responses: {
        200: { description: 'Signed in: the session cookie is set', schema: sessionSchema },
        401: { description: '`invalid_credentials`: the email or the password is wrong (the same answer for both)' },
        429: { description: '`too_many_attempts`: too many wrong passwords for this email or from this address; `Retry-After`' },
      },
      async handle(ctx, { body }) {
        const outcome = await passwordWork(() => signIn(db, { email: body.email, password: body.password, address: clientAddress(ctx, settings.trustedProxyHops) }, settings));
        if (outcome.outcome === 'throttled') throw tooManyAttempts(outcome.retryAfterSeconds);
        if (outcome.outcome === 'refused') throw new AppError(401, 'invalid_credentials', 'The email or password is wrong');
        // Whatever session the browser held before is ended: a token planted before sign-in is never honoured after.
        const before = ctx.state.session as SessionUser | undefined;
        if (before) await endSession(db, before.sessionId);
        signedIn(ctx, outcome.session);
      },
    }),
    dashboardRoute({
      method: 'get', path: '/session', operationId: 'currentSession', access: 'member', summary: 'The signed-in user and the CSRF token of the session',
      responses: { 200: { description: 'Signed in', schema: sessionSchema }, 401: { description: '`not_signed_in`' } },
      async handle(ctx, { user }) {
        ctx.body = sessionView(user);
      },
    }),
    dashboardRoute({
      method: 'post', path: '/sign-out', operationId: 'signOut', access: 'member', summary: 'End this session',
      responses: { 204: { description: 'Signed out' } },
      async handle(ctx, { user }) {
        await endSession(db, user.sessionId);
        clearSessionCookie(ctx, secure);
        ctx.status = 204;
      },
    }),
    dashboardRoute({
      method: 'post', path: '/sign-out-everywhere', operationId: 'signOutEverywhere', access: 'member', summary: 'End every session of this user, this one included',
      responses: { 204: { description: 'Signed out everywhere' } },
      async handle(ctx, { user }) {
        await endUserSessions(db.manager, user.userId);
        clearSessionCookie(ctx, secure);
        ctx.status = 204;
      },
    }),
    dashboardRoute({
      method: 'post', path: '/password', operationId: 'changePassword', access: 'member',
      summary: 'Change the password: every other session of the user ends, this one goes on with a new token',
      body: {
        type: 'object', required: ['current_password', 'new_password'], additionalProperties: false,
        properties: { current_password: givenPassword, new_password: password },
      },
      responses: { 200: { description: 'Changed; a new session', schema: sessionSchema }, 401: { description: '`invalid_credentials`: the current password is wrong' } },
      async handle(ctx, { body, user }) {
        const subject = `password:${user.userId}`;
        const throttled = await takeAttempt(db, [{ subject, limit: PASSWORD_CHANGE_ATTEMPTS }]);
        if (throttled !== undefined) throw tooManyAttempts(throttled);
        if (!(await passwordWork(async () => passwordMatches(await passwordHashOf(db, user.userId), body.current_password)))) {
          throw new AppError(401, 'invalid_credentials', 'The current password is wrong');
        }
        await giveBackAttempt(db, [subject]);
        const hash = await passwordWork(() => hashPassword(body.new_password));
        const session = await db.transaction(async (m) => {
          await setPassword(m, user.userId, hash); // every link spent, every session ended
          return startSession(m, user.userId, settings);
        });
        signedIn(ctx, session);
      },
    }),
    dashboardRoute({
      method: 'post', path: '/links/redeem', operationId: 'redeemLink', access: 'public',
      summary: 'Set the password through a one-time link (an invitation or a reset) and sign in',
      body: {
        type: 'object', required: ['token', 'password'], additionalProperties: false,
        properties: { token: { type: 'string', minLength: 43, maxLength: 43, pattern: '^[A-Za-z0-9_-]{43}$' }, password },
      },
      responses: {
        200: { description: 'The password is set, every earlier session ended; signed in', schema: sessionSchema },
        400: { description: '`invalid_link`: the link is unknown, used or expired' },
      },
      async handle(ctx, { body }) {
        const redeemed = await passwordWork(() => redeemLink(db, body.token, body.password));
        if (!redeemed) throw new AppError(400, 'invalid_link', 'This link is unknown, used or expired; ask for a new one');
        const session = await startSession(db.manager, redeemed.userId, settings);
        signedIn(ctx, session);
      },
    }),
    dashboardRoute({
      method: 'post', path: '/password-reset', operationId: 'requestPasswordReset', access: 'public',
      summary: 'Send a one-time reset link to this email if it has a user (the answer is the same either way)',
      body: { type: 'object', required: ['email'], additionalProperties: false, properties: { email } },
      responses: { 202: { description: 'If the email has a user, a link is on its way' } },
      async handle(ctx, { body }) {
        // Past its limits a request is answered the same, and nothing is sent.
        const throttled = await takeAttempt(db, [
          { subject: `reset:${body.email.toLowerCase()}`, limit: RESETS_PER_EMAIL }, { subject: `reset-address:${clientAddress(ctx, settings.trustedProxyHops)}`, limit: RESETS_PER_ADDRESS },
        ]);
        // Made and sent after this answer (mailed through SMTP_URL, or written to the service log), so that the answer
        // does the same work whether or not the email has a user.
        if (throttled === undefined) {
          afterAnswer(ctx, 'a password reset', async () => {
            const reset = await createResetLink(db, body.email);
            if (reset) linkMail.send({ to: reset.email, userId: reset.userId, purpose: 'reset', link: linkUrl(config.publicBaseUrl, reset.token) });
          });
        }
        ctx.status = 202;
        ctx.body = { message: 'If this email has a user, a reset link is on its way' };
      },
    }),
  ];
}
