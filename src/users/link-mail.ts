/**
 * How a one-time link reaches its user: by email through the SMTP server of `SMTP_URL` (nodemailer), or, without one
 * (the embedded default), written to the service log for the operator to pass on.
 *
 * A link is sent after the request is answered, never awaited by it: an answer that waited for the mail server
 * would take longer for an email that has a user than for one that has none, and tell the difference. A send that
 * fails is tried twice more (after 2 and 10 s) and then logged without the link (the user asks again).
 */
import nodemailer, { type Transporter } from 'nodemailer';
import { log } from '../log';
import type { LinkPurpose } from './links';

export interface LinkMessage { to: string; userId: number; purpose: LinkPurpose; link: string }

export interface LinkMailer {
  /** Sends the link in the background (see above). */
  send(message: LinkMessage): void;
  /** Waits for the sends under way (shutdown, tests). */
  drain(): Promise<void>;
}

const RETRY_AFTER_MS = [2_000, 10_000];

const WORDING: Record<LinkPurpose, { subject: string; text: (link: string) => string }> = {
  invite: {
    subject: 'Your invitation to the Product imagery dashboard',
    text: (link) => `You are invited to the Product imagery dashboard.\n\nOpen this link to choose your password and sign in (it works once, for 7 days):\n\n${link}\n`,
  },
  reset: {
    subject: 'Reset your Product imagery dashboard password',
    text: (link) => `Someone asked to reset the password of this email on the Product imagery dashboard.\n\n`
      + `Open this link to choose a new one (it works once, for an hour):\n\n${link}\n\nIf it was not you, ignore this email.\n`,
  },
};

/** The mailer of the settings: SMTP when `smtpUrl` is set, else the log. */
export function linkMailer(settings: { smtpUrl?: string; mailFrom: string }, retryAfterMs = RETRY_AFTER_MS): LinkMailer {
  const sending = new Set<Promise<void>>();
  const background = (work: Promise<void>) => {
    sending.add(work);
    void work.finally(() => sending.delete(work));
  };
  const drain = async () => { await Promise.allSettled([...sending]); };

  if (!settings.smtpUrl) {
    return {
      send({ userId, purpose, link }) {
        log.info(`dashboard ${purpose === 'invite' ? 'invitation' : 'password reset'} link (no SMTP_URL: written here)`, { userId, link });
      },
      drain,
    };
  }
  const transport: Transporter = nodemailer.createTransport(settings.smtpUrl);
  return {
    send(message) {
      const wording = WORDING[message.purpose];
      background((async () => {
        for (let attempt = 0; ; attempt++) {
          try {
            await transport.sendMail({ from: settings.mailFrom, to: message.to, subject: wording.subject, text: wording.text(message.link) });
            return;
          } catch (err) {
            if (attempt >= retryAfterMs.length) {
              log.warn('a dashboard link could not be mailed', { userId: message.userId, purpose: message.purpose, error: (err as Error).message });
              return;
            }
            await new Promise((resolve) => setTimeout(resolve, retryAfterMs[attempt]));
          }
        }
      })());
    },
    drain,
  };
}
