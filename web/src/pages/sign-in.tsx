import { useState } from 'preact/hooks';
import { api, type Session } from '../api';
import { ErrorNote, useSubmission } from './parts';

export function SignInPage({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const { error, setError, busy, submit: run } = useSubmission();
  const [notice, setNotice] = useState<string>();
  const [resetting, setResetting] = useState(false);

  function submit(event: Event) {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    void run(async () => {
      if (!resetting) return onSignedIn(await api<Session>('POST', '/sign-in', { email: form.get('email'), password: form.get('password') }));
      await api('POST', '/password-reset', { email: form.get('email') });
      setNotice('If this email has a user, a reset link is on its way.');
      setResetting(false);
    });
  }

  return (
    <main class="centered">
      <form class="card narrow" onSubmit={submit}>
        <h1>{resetting ? 'Reset your password' : 'Sign in'}</h1>
        <p class="muted">Product imagery dashboard</p>
        <label>Email<input name="email" type="email" autocomplete="username" required maxLength={254} /></label>
        {!resetting && <label>Password<input name="password" type="password" autocomplete="current-password" required maxLength={200} /></label>}
        <ErrorNote message={error} />
        {notice && <p role="status" class="notice">{notice}</p>}
        <button type="submit" disabled={busy}>{resetting ? 'Send a reset link' : 'Sign in'}</button>
        <button type="button" class="link" onClick={() => { setResetting(!resetting); setError(undefined); }}>
          {resetting ? 'Back to sign in' : 'Forgot your password?'}
        </button>
      </form>
    </main>
  );
}
