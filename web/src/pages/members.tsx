/** Members (owners only): the people of the account, invite someone, change a role, remove after a confirmation. */
import { useEffect, useState } from 'preact/hooks';
import { api, type User, when } from '../api';
import { ConfirmDialog, ErrorNote, useChanges } from './parts';

interface Member { id: number; email: string; role: 'owner' | 'member'; active: boolean; created_at: string }

export function MembersPage({ self }: { self: User }) {
  const [members, setMembers] = useState<Member[]>();
  const [notice, setNotice] = useState<string>();
  const [confirming, setConfirming] = useState<Member>();
  const { error, change: act } = useChanges(() => api<{ members: Member[] }>('GET', '/members').then((r) => setMembers(r.members)));
  useEffect(() => { void act(async () => undefined); }, []);

  async function invite(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    await act(async () => {
      const answer = await api<{ message: string }>('POST', '/members', { email: form.get('email'), role: form.get('role') });
      setNotice(answer.message);
      formElement.reset();
    });
  }

  return (
    <section>
      <h1>Members</h1>
      <p class="muted">Owners manage everything, members too; members manage everything else.</p>
      <ErrorNote message={error} />
      {notice && <p role="status" class="notice">{notice}</p>}
      <form class="card row wrap" onSubmit={invite} aria-label="Invite someone">
        <label>Email<input name="email" type="email" required maxLength={254} /></label>
        <label>Role<select name="role"><option value="member">Member</option><option value="owner">Owner</option></select></label>
        <button type="submit">Send invitation</button>
      </form>
      {members === undefined ? <p aria-busy="true">Loading…</p> : (
        <table class="list">
          <caption class="sr-only">Members</caption>
          <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {members.map((m) => (
              <tr key={m.id}>
                <td data-label="Email">{m.email}{!m.active && <span class="badge">invited</span>}</td>
                <td data-label="Role">
                  <select aria-label={`Role of ${m.email}`} value={m.role}
                    onChange={(e) => act(() => api('PATCH', `/members/${m.id}`, { role: (e.currentTarget as HTMLSelectElement).value }))}>
                    <option value="member">Member</option><option value="owner">Owner</option>
                  </select>
                </td>
                <td data-label="Since">{when(m.created_at)}</td>
                <td>{m.id !== self.id && <button type="button" class="danger" onClick={() => setConfirming(m)}>Remove</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {confirming && (
        <ConfirmDialog title={`Remove ${confirming.email}?`} confirm="Remove" onCancel={() => setConfirming(undefined)}
          onConfirm={() => { const m = confirming; setConfirming(undefined); void act(() => api('DELETE', `/members/${m.id}`)); }}>
          They are signed out at once and can no longer sign in to this account.
        </ConfirmDialog>
      )}
    </section>
  );
}
