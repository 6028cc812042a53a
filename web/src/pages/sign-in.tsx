/**
 * Signed out: sign in, ask for a password reset link, or (where open sign-up is on) make an account, whose link to
 * choose a password goes to the email.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Session } from '../api';
import { ErrorNote, useSubmission } from './parts';

type Mode = 'sign-in' | 'reset' | 'sign-up';
const TITLES: Record<Mode, string> = { 'sign-in': 'Sign in', reset: 'Reset your password', 'sign-up': 'Make an account' };
const BUTTONS: Record<Mode, string> = { 'sign-in': 'Sign in', reset: 'Send a reset link', 'sign-up': 'Send me a link' };

export function SignInPage({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const { error, setError, busy, submit: run } = useSubmission();
  const [notice, setNotice] = useState<string>();
  const [mode, setMode] = useState<Mode>('sign-in');
  const [signUpOpen, setSignUpOpen] = useState(false);
  useEffect(() => { api<{ sign_up: boolean }>('GET', '/features').then((f) => setSignUpOpen(f.sign_up), () => undefined); }, []);

  const switchTo = (next: Mode) => { setMode(next); setError(undefined); setNotice(undefined); };

  function submit(event: Event) {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    void run(async () => {
      if (mode === 'sign-in') return onSignedIn(await api<Session>('POST', '/sign-in', { email: form.get('email'), password: form.get('password') }));
      const answer = mode === 'reset'
        ? await api<{ message: string }>('POST', '/password-reset', { email: form.get('email') })
        : await api<{ message: string }>('POST', '/sign-up', { email: form.get('email'), account_name: String(form.get('account') || '') || undefined });
      setMode('sign-in');
      setNotice(`${answer.message}.`);
    });
  }

  return (
    <main class="centered">
      <form class="card narrow" onSubmit={submit}>
        <h1>{TITLES[mode]}</h1>
        <p class="muted">Product imagery dashboard</p>
        <label>Email<input name="email" type="email" autocomplete="username" required maxLength={254} /></label>
        {mode === 'sign-in' && <label>Password<input name="password" type="password" autocomplete="current-password" required maxLength={200} /></label>}
        {mode === 'sign-up' && <label>Account name<input name="account" autocomplete="organization" maxLength={100} placeholder="Your company" /></label>}
        <ErrorNote message={error} />
        {notice && <p role="status" class="notice">{notice}</p>}
        <button type="submit" disabled={busy}>{BUTTONS[mode]}</button>
        {mode === 'sign-in' ? (
          <div class="row wrap spread">
            <button type="button" class="link" onClick={() => switchTo('reset')}>Forgot your password?</button>
            {signUpOpen && <button type="button" class="link" onClick={() => switchTo('sign-up')}>Make an account</button>}
          </div>
        ) : <button type="button" class="link" onClick={() => switchTo('sign-in')}>Back to sign in</button>}
      </form>
    </main>
  );
}
