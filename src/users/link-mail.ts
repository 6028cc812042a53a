/**
 * How a one-time link reaches its user: by email through the SMTP server of `SMTP_URL` (nodemailer), or, without one
 * (the embedded default), written to the service log for the operator to pass on.
 *
 * A link is sent in the background, never awaited by a request: an answer that waited for the mail server would
 * take longer for an email that has a user than for one that has none, and tell the difference. A send that fails
 * is tried twice more (after 2 and 10 s) and then logged without the link (the user asks again). `smtp://` uses
 * STARTTLS when the server offers it; add `?requireTLS=true` to refuse a server that does not (or use `smtps://`).
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
/** A mail server that does not answer is given up on within these (nodemailer's defaults wait up to 10 minutes). */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };
/** Mails one process keeps waiting for the mail server at most; past it a link is dropped (and logged without it). */
const MAX_SENDING = 100;
/** Shutdown waits this long at most for the mails under way. */
const DRAIN_MS = 15_000;

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
  const drain = async () => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...sending]), new Promise((resolve) => { timer = setTimeout(resolve, DRAIN_MS); })]);
    clearTimeout(timer);
  };

  if (!settings.smtpUrl) {
    return {
      send({ userId, purpose, link }) {
        log.info(`dashboard ${purpose === 'invite' ? 'invitation' : 'password reset'} link (no SMTP_URL: written here)`, { userId, link });
      },
      drain,
    };
  }
  const transport: Transporter = nodemailer.createTransport({ url: settings.smtpUrl, ...SMTP_TIMEOUTS });
  return {
    send(message) {
      if (sending.size >= MAX_SENDING) {
        log.warn('a dashboard link was not mailed: too many mails are waiting for the mail server', { userId: message.userId, purpose: message.purpose });
        return;
      }
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
