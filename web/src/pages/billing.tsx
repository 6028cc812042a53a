/**
 * Billing: the account's ledger (grants, holds, charges, releases), newest first, a page at a time, and the whole of
 * it as a CSV download.
 */
import { API, when } from '../api';
import { BASE } from '../paths';
import { ErrorNote, usePagedList } from './parts';

interface Entry { at: string; kind: 'grant' | 'charge' | 'hold' | 'release'; amount: number; action_id: number | null; reference: string | null }

const KINDS = { grant: 'Grant', charge: 'Charge', hold: 'Hold', release: 'Release' };
const EFFECT = { grant: 'balance', charge: 'balance', hold: 'available', release: 'available' };

export function BillingPage() {
  const { items: entries, error, busy, more } = usePagedList<Entry>('/ledger?limit=50', 'entries');
  return (
    <section>
      <div class="row wrap spread">
        <h1>Billing</h1>
        <a class="button secondary" href={`${API}/ledger.csv`} download>Export CSV</a>
      </div>
      <p class="muted">Grants add sparks and charges take them; a hold sets sparks aside while an action runs, and a release gives them back.</p>
      <ErrorNote message={error} />
      {entries === undefined ? <p aria-busy="true">Loading…</p> : entries.length === 0 ? <p class="muted">No money has moved yet.</p> : (
        <>
          <table class="list">
            <caption class="sr-only">Ledger</caption>
            <thead><tr><th scope="col">When</th><th scope="col">Entry</th><th scope="col">Sparks</th><th scope="col">For</th></tr></thead>
            <tbody>
              {entries.map((e, i) => (
                <tr key={i}>
                  <td data-label="When">{when(e.at)}</td>
                  <td data-label="Entry">{KINDS[e.kind]}</td>
                  <td data-label="Sparks">{e.amount > 0 ? `+${e.amount}` : e.amount} <span class="muted">{EFFECT[e.kind]}</span></td>
                  <td data-label="For">{e.action_id !== null ? <a href={`${BASE}/actions/${e.action_id}`}>Action {e.action_id}</a> : <span class="muted">{e.reference}</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {more && <p><button type="button" class="secondary" disabled={busy} onClick={more}>Show older</button></p>}
        </>
      )}
    </section>
  );
}
