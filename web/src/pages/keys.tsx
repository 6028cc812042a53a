/**
 * API keys: the account's keys with their masked prefix, when made and last used, their grouping and what they spent
 * this month against their monthly limit; create one (its secret shown once, with a copy button), rename, switch the
 * grouping, set or remove a spend limit (owners), revoke after a confirmation. Sandbox keys (`ak_test_`) are made
 * and listed beside live ones, marked "Sandbox".
 */
import { useEffect, useState } from 'preact/hooks';
import { api, when } from '../api';
import { ConfirmDialog, CopyButton, ErrorNote, InlineEdit, useChanges } from './parts';

export interface Key {
  id: number; name: string; prefix: string; sandbox: boolean; default_grouping: 'api_key_inbox' | 'legacy_per_request';
  created_at: string; last_used_at: string | null; revoked_at: string | null;
  monthly_spend_limit: number | null; spent_this_month: number;
}

const GROUPINGS = { api_key_inbox: 'One inbox project', legacy_per_request: 'A project per request' };

export function KeysPage({ owner }: { owner: boolean }) {
  const [keys, setKeys] = useState<Key[]>();
  const [sandbox, setSandbox] = useState<{ balance: number; available: number } | null>(null);
  const [secret, setSecret] = useState<{ name: string; value: string }>();
  const [confirming, setConfirming] = useState<Key>();
  const { error, change } = useChanges(() => api<{ keys: Key[]; sandbox: { balance: number; available: number } | null }>('GET', '/keys').then((r) => {
    setKeys(r.keys);
    setSandbox(r.sandbox);
  }));
  useEffect(() => { void change(async () => undefined); }, []);

  function create(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    void change(async () => {
      const name = String(form.get('name') || '') || undefined;
      const created = await api<{ key: Key; api_key: string }>('POST', '/keys', {
        name, default_grouping: form.get('grouping'), sandbox: form.get('kind') === 'sandbox',
      });
      setSecret({ name: created.key.name, value: created.api_key });
      formElement.reset();
    });
  }

  const edit = (key: Key, patch: Partial<Pick<Key, 'name' | 'default_grouping'>>) => change(() => api('PATCH', `/keys/${key.id}`, patch));
  const setLimit = (key: Key, limit: number | null) => change(() => api('POST', `/keys/${key.id}/spend-limit`, { monthly_spend_limit: limit }));
  const revoke = (key: Key) => {
    setConfirming(undefined);
    void change(() => api('POST', `/keys/${key.id}/revoke`));
  };

  const active = keys?.filter((k) => !k.revoked_at) ?? [];
  const full = (sandbox: boolean) => active.filter((k) => k.sandbox === sandbox).length >= 10;
  return (
    <section>
      <h1>API keys</h1>
      <p class="muted">
        Keys call the API as this account. At most 10 live and 10 sandbox keys are active; revoke one that leaked, it is
        refused at once. A sandbox key (<code>ak_test_</code>) works like a live one, but its work is rendered locally and
        marked “SANDBOX”, it uses the sandbox's sparks (topped up daily), and its failure drills are asked
        with <code>X-Sandbox-Scenario</code>.
      </p>
      {sandbox && <p>Sandbox sparks: <strong>{sandbox.available}</strong> available of {sandbox.balance} (topped up daily; live sparks are not used)</p>}
      <ErrorNote message={error} />
      {secret && (
        <div class="card secret" role="status">
          <h2>Your new key “{secret.name}”</h2>
          <p>Copy it now: it is shown only this once.</p>
          <code class="key">{secret.value}</code>
          <div class="row"><CopyButton text={secret.value} label="Copy key" /><button type="button" class="link" onClick={() => setSecret(undefined)}>Done</button></div>
        </div>
      )}
      <form class="card row wrap" onSubmit={create} aria-label="Create a key">
        <label>Name<input name="name" maxLength={100} /></label>
        <label>Kind
          <select name="kind"><option value="live">Live</option><option value="sandbox">Sandbox (test)</option></select>
        </label>
        <label>Ungrouped generations go to
          <select name="grouping">{Object.entries(GROUPINGS).map(([v, label]) => <option value={v}>{label}</option>)}</select>
        </label>
        <button type="submit" disabled={full(false) && full(true)}>Create key</button>
      </form>
      {keys === undefined ? <p aria-busy="true">Loading…</p> : (
        <table class="list">
          <caption class="sr-only">API keys</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Grouping</th><th scope="col">Spent this month</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {keys.map((key) => (
              <tr key={key.id} class={key.revoked_at ? 'revoked' : undefined}>
                <td data-label="Name">{key.revoked_at ? key.name : <EditableName value={key.name} onSave={(name) => edit(key, { name })} />}</td>
                <td data-label="Key"><code>{key.prefix}…</code>{key.sandbox && <> <span class="badge">Sandbox</span></>}</td>
                <td data-label="Created">{when(key.created_at)}</td>
                <td data-label="Last used">{key.last_used_at ? when(key.last_used_at) : 'Never'}</td>
                <td data-label="Grouping">
                  {key.revoked_at ? GROUPINGS[key.default_grouping] : (
                    <select aria-label={`Grouping of ${key.name}`} value={key.default_grouping}
                      onChange={(e) => edit(key, { default_grouping: (e.currentTarget as HTMLSelectElement).value as Key['default_grouping'] })}>
                      {Object.entries(GROUPINGS).map(([v, label]) => <option value={v}>{label}</option>)}
                    </select>
                  )}
                </td>
                <td data-label="Spent this month">
                  <SpendLimit spent={key.spent_this_month} limit={key.monthly_spend_limit} keyName={key.name}
                    onSave={owner && !key.revoked_at ? (limit) => setLimit(key, limit) : undefined} />
                </td>
                <td>{key.revoked_at ? <span class="badge">Revoked {when(key.revoked_at)}</span>
                  : <button type="button" class="danger" onClick={() => setConfirming(key)}>Revoke</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {confirming && (
        <ConfirmDialog title={`Revoke “${confirming.name}”?`} confirm="Revoke key" onConfirm={() => revoke(confirming)} onCancel={() => setConfirming(undefined)}>
          Every request with this key is refused from now on. This cannot be undone.
        </ConfirmDialog>
      )}
    </section>
  );
}

/** What the key spent this month (UTC) of its limit; an owner sets the limit, or leaves the field empty for none. */
function SpendLimit({ spent, limit, keyName, onSave }: { spent: number; limit: number | null; keyName: string; onSave?: (limit: number | null) => void }) {
  return (
    <InlineEdit shown={limit === null ? `${spent} sparks, no limit` : `${spent} of ${limit} sparks`} action="Set limit" actionLabel={`Set limit of ${keyName}`}
      input={{ type: 'number', min: 0, max: 2147483647, step: 1, 'aria-label': 'Monthly spend limit in sparks (empty: none)', value: limit ?? '', placeholder: 'No limit' }}
      onSave={onSave && ((text) => onSave(text === '' ? null : Number(text)))} />
  );
}

function EditableName({ value, onSave }: { value: string; onSave: (name: string) => void }) {
  return (
    <InlineEdit shown={value} action="Rename" actionLabel={`Rename ${value}`} input={{ 'aria-label': 'New name', value, maxLength: 100, required: true }}
      onSave={(name) => { if (name && name !== value) onSave(name); }} />
  );
}
