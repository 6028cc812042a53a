/**
 * The dashboard's one-time links by email (`SMTP_URL`), against a real SMTP server run by the suite (smtp-server):
 * an owner's invitation and a password reset arrive with a link that signs in; a reset for an email without a user
 * sends nothing; a mail server that refuses at first gets the mail on a later attempt; open sign-up (on here) makes
 * an account whose owner signs in through the mailed link, and an email that has a user makes nothing.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { dashboardBrowser, signedInUser } from '../support/dashboard-client';
import { eventually } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

interface Mail { to: string; from: string; subject: string; text: string }

describe('dashboard links by email', function () {
  this.timeout(60_000);
  let stack: Stack;
  let smtp: SMTPServer;
  const inbox: Mail[] = [];
  /** Recipients refused once (a mail server's temporary failure) before their mail is taken. */
  const refuseOnce = new Set<string>();

  before(async () => {
    smtp = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      onRcptTo(address, _session, callback) {
        if (refuseOnce.delete(address.address)) return callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
        callback();
      },
      onData(stream, _session, callback) {
        simpleParser(stream).then((mail) => {
          inbox.push({ to: (mail.to as { text: string }).text, from: mail.from!.text, subject: mail.subject ?? '', text: mail.text ?? '' });
          callback();
        }, callback);
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    stack = await startStack({
      withWorker: false, smtpUrl: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, dashboard: { signUp: true, signUpSparks: 25 },
    });
  });
  after(async () => {
    await stack?.stop();
    await new Promise<void>((resolve) => smtp.close(resolve));
  });

  const mailTo = (email: string) => eventually(async () => inbox.filter((m) => m.to === email), (mails) => mails.length > 0).then((mails) => mails);
  const tokenIn = (mail: Mail) => /\/dashboard\/#link=([A-Za-z0-9_-]{43})/.exec(mail.text)![1];

  it('mails an owner\'s invitation with a link that sets the password and signs in', async () => {
    const owner = await signedInUser(stack.baseUrl, stack.db);
    const email = `invited-${Date.now()}@example.com`;
    assert.equal((await owner.browser.call('POST', '/members', { email })).status, 202);
    const [mail] = await mailTo(email);
    assert.equal(mail.subject, 'Your invitation to the Product imagery dashboard');
    assert.equal(mail.from, '"Product imagery" <no-reply@example.com>');
    assert.ok(mail.text.startsWith(`You are invited`));
    const invited = dashboardBrowser(stack.baseUrl);
    const redeemed = await invited.call('POST', '/links/redeem', { token: tokenIn(mail), password: 'a long enough password' });
    assert.deepEqual([redeemed.status, redeemed.body.user.email], [200, email]);
  });

  it('mails a reset link to an email with a user, nothing to one without, and tries again when the server refuses', async () => {
    const { email } = await signedInUser(stack.baseUrl, stack.db);
    const stranger = `nobody-${Date.now()}@example.com`;
    refuseOnce.add(email);
    const anonymous = dashboardBrowser(stack.baseUrl);
    for (const who of [stranger, email]) {
      const answer = await anonymous.call('POST', '/password-reset', { email: who });
      assert.deepEqual([answer.status, answer.body.message], [202, 'If this email has a user, a reset link is on its way']);
    }
    const [mail] = await mailTo(email);
    assert.equal(refuseOnce.size, 0, 'refused once, then taken');
    assert.equal(mail.subject, 'Reset your Product imagery dashboard password');
    await stack.services.linkMail.drain();
    assert.deepEqual(inbox.filter((m) => m.to === stranger), [], 'nothing for an email without a user');
    const redeemed = await dashboardBrowser(stack.baseUrl).call('POST', '/links/redeem', { token: tokenIn(mail), password: 'another long password' });
    assert.deepEqual([redeemed.status, redeemed.body.user.email], [200, email]);
  });

  it('open sign-up makes an account with its sparks, owned through the mailed link; an email with a user makes nothing', async () => {
    const email = `signs-up-${Date.now()}@example.com`;
    const anonymous = dashboardBrowser(stack.baseUrl);
    assert.deepEqual((await anonymous.call('GET', '/features')).body, { sign_up: true });
    const answer = await anonymous.call('POST', '/sign-up', { email, account_name: '<b>Acme</b>' });
    assert.deepEqual([answer.status, answer.body.message], [202, 'If this email can make an account, a link to choose your password is on its way']);
    const [mail] = await mailTo(email);
    const owner = dashboardBrowser(stack.baseUrl);
    const redeemed = await owner.call('POST', '/links/redeem', { token: tokenIn(mail), password: 'a long enough password' });
    assert.deepEqual([redeemed.status, redeemed.body.user.role], [200, 'owner']);
    assert.equal((await owner.call('GET', '/overview')).body.balance, 25);
    assert.deepEqual((await owner.call('GET', '/keys')).body.keys, [], 'no key until the owner makes one');
    const [account] = await stack.db.query('SELECT name FROM accounts WHERE id = $1', [redeemed.body.user.account_id]);
    assert.equal(account.name, '<b>Acme</b>');

    const accountsBefore = (await stack.db.query('SELECT count(*)::int AS n FROM accounts'))[0].n;
    const again = await anonymous.call('POST', '/sign-up', { email: email.toUpperCase() });
    assert.deepEqual([again.status, again.body.message], [answer.status, answer.body.message], 'the same answer');
    await stack.services.linkMail.drain();
    assert.equal(inbox.filter((m) => m.to.toLowerCase() === email).length, 1, 'no second mail');
    assert.equal((await stack.db.query('SELECT count(*)::int AS n FROM accounts'))[0].n, accountsBefore, 'no account made');
  });
});
