import { api, type Session } from '../api';
import { ErrorNote, useSubmission } from './parts';

/** The page of a one-time link (an invitation or a reset): choose a password, then signed in. */
export function LinkPage({ token, onSignedIn }: { token: string; onSignedIn: (session: Session) => void }) {
  const { error, setError, busy, submit: run } = useSubmission();

  function submit(event: Event) {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    if (form.get('password') !== form.get('repeat')) return setError('The two passwords differ');
    void run(async () => onSignedIn(await api<Session>('POST', '/links/redeem', { token, password: form.get('password') })));
  }

  return (
    <main class="centered">
      <form class="card narrow" onSubmit={submit}>
        <h1>Choose your password</h1>
        <p class="muted">At least 10 characters. Signing in with it ends every other session of yours.</p>
        <label>New password<input name="password" type="password" autocomplete="new-password" required minLength={10} maxLength={200} /></label>
        <label>Repeat it<input name="repeat" type="password" autocomplete="new-password" required minLength={10} maxLength={200} /></label>
        <ErrorNote message={error} />
        <button type="submit" disabled={busy}>Set password and sign in</button>
      </form>
    </main>
  );
}
