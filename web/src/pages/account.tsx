/** The signed-in user's own settings: change the password, sign out everywhere. */
import { useState } from 'preact/hooks';
import { api, type Session } from '../api';
import { ErrorNote, messageOf } from './parts';

export function AccountPage({ onSession, onSignedOut }: { onSession: (s: Session) => void; onSignedOut: () => void }) {
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();

  async function changePassword(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    setError(undefined);
    if (form.get('new_password') !== form.get('repeat')) return setError('The two new passwords differ');
    try {
      onSession(await api<Session>('POST', '/password', { current_password: form.get('current_password'), new_password: form.get('new_password') }));
      formElement.reset();
      setNotice('Password changed. Every other session of yours has ended.');
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return (
    <section>
      <h1>Account</h1>
      <ErrorNote message={error} />
      {notice && <p role="status" class="notice">{notice}</p>}
      <form class="card narrow" onSubmit={changePassword} aria-labelledby="password-title">
        <h2 id="password-title">Change your password</h2>
        <label>Current password<input name="current_password" type="password" autocomplete="current-password" required maxLength={200} /></label>
        <label>New password<input name="new_password" type="password" autocomplete="new-password" required minLength={10} maxLength={200} /></label>
        <label>Repeat the new password<input name="repeat" type="password" autocomplete="new-password" required minLength={10} maxLength={200} /></label>
        <button type="submit">Change password</button>
      </form>
      <div class="card narrow">
        <h2>Sessions</h2>
        <p>Sign out of the dashboard in every browser, this one included.</p>
        <button type="button" class="danger" onClick={async () => { await api('POST', '/sign-out-everywhere'); onSignedOut(); }}>Sign out everywhere</button>
      </div>
    </section>
  );
}
