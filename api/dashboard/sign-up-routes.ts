/**
 * What the signed-out pages need to know (`GET /features`), and open sign-up when `DASHBOARD_SIGN_UP=on`: an email
 * makes its own account and gets the same one-time link as an invitation (src/users/sign-up.ts). The answer is the
 * same whether or not the email could sign up, and past the throttle; off, sign-up answers 403 `sign_up_closed`.
 */
import { AppError } from '../../src/errors';
import { linkUrl } from '../../src/users/links';
import { takeAttempt } from '../../src/users/password-attempts';
import { signUp } from '../../src/users/sign-up';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { afterAnswer, clientAddress, dashboardRoute, dashboardSettings } from './session-guard';

/** Sign-ups an email may ask for per 15 minutes, and an address. */
const SIGN_UPS_PER_EMAIL = 3;
const SIGN_UPS_PER_ADDRESS = 10;
const ANSWER = 'If this email can make an account, a link to choose your password is on its way';

export function signUpRoutes({ db, config, linkMail }: ApiServices): Route[] {
  const settings = dashboardSettings(config);
  return [
    dashboardRoute({
      method: 'get', path: '/features', operationId: 'features', access: 'public', summary: 'What the dashboard offers a signed-out browser',
      responses: {
        200: { description: 'Features', schema: { type: 'object', required: ['sign_up'], properties: { sign_up: { type: 'boolean' } } } },
      },
      async handle(ctx) {
        ctx.body = { sign_up: settings.signUp };
      },
    }),
    dashboardRoute({
      method: 'post', path: '/sign-up', operationId: 'signUp', access: 'public',
      summary: 'Make an account: a one-time link to choose the password goes to the email (the same answer whether or not it could)',
      body: {
        type: 'object', required: ['email'], additionalProperties: false,
        properties: { email: { type: 'string', format: 'email', minLength: 3, maxLength: 254 }, account_name: { type: 'string', minLength: 1, maxLength: 100 } },
      },
      responses: { 202: { description: 'If the email could make an account, a link is on its way' }, 403: { description: '`sign_up_closed`' } },
      async handle(ctx, { body }) {
        if (!settings.signUp) throw new AppError(403, 'sign_up_closed', 'Accounts are made by invitation only here');
        const throttled = await takeAttempt(db, [
          { subject: `sign-up:${body.email.toLowerCase()}`, limit: SIGN_UPS_PER_EMAIL },
          { subject: `sign-up-address:${clientAddress(ctx, settings.trustedProxyHops)}`, limit: SIGN_UPS_PER_ADDRESS },
        ]);
        // Made after this answer, so that it does the same work whether or not the email could sign up.
        if (throttled === undefined) {
          afterAnswer(ctx, 'a sign-up', async () => {
            const made = await signUp(db, { email: body.email, accountName: body.account_name ?? body.email, sparks: settings.signUpSparks });
            if (made !== 'taken') linkMail.send({ to: body.email, userId: made.userId, purpose: 'invite', link: linkUrl(config.publicBaseUrl, made.token) });
          });
        }
        ctx.status = 202;
        ctx.body = { message: ANSWER };
      },
    }),
  ];
}
