/** Batches: the account's catalogue batches, newest first, each with its items per status and money; its items in the gallery. */
import { when } from '../api';
import { BASE } from '../paths';
import { ErrorNote, usePagedList } from './parts';

interface Batch {
  batch_id: string; status: string; items: number; counts: Record<string, number>; price: number; held: number; charged: number;
  max_sparks: number | null; created_at: string; completed_at: string | null;
}

/** Item statuses in the order a batch moves them, shown when any item has them. */
const SHOWN = ['pending', 'running', 'succeeded', 'failed', 'cancelled', 'skipped', 'invalid'];

export function BatchesPage() {
  const { items: batches, error, busy, more } = usePagedList<Batch>('/batches?limit=20', 'batches');
  return (
    <section>
      <h1>Batches</h1>
      <p class="muted">Catalogues sent to <code>POST /api/v2/batches</code>. Each item holds its price when it starts; a batch stops at its <code>max_sparks</code>.</p>
      <ErrorNote message={error} />
      {batches === undefined ? <p aria-busy="true">Loading…</p> : batches.length === 0 ? <p class="muted">No batch yet.</p> : (
        <>
          <table class="list">
            <caption class="sr-only">Batches</caption>
            <thead><tr><th scope="col">Started</th><th scope="col">Status</th><th scope="col">Items</th><th scope="col">Sparks</th><th scope="col">Results</th></tr></thead>
            <tbody>
              {batches.map((b) => (
                <tr key={b.batch_id}>
                  <td data-label="Started">{when(b.created_at)}<br /><code class="muted">{b.batch_id}</code></td>
                  <td data-label="Status"><span class={`state ${b.status}`}>{b.status.replace(/_/g, ' ')}</span></td>
                  <td data-label="Items">
                    {b.items} · {SHOWN.filter((s) => b.counts[s] > 0).map((s) => `${b.counts[s]} ${s}`).join(', ')}
                  </td>
                  <td data-label="Sparks">
                    {b.charged} charged{b.held > 0 ? `, ${b.held} held` : ''} <span class="muted">of {b.price}{b.max_sparks !== null ? ` (at most ${b.max_sparks})` : ''}</span>
                  </td>
                  <td data-label="Results"><a href={`${BASE}/gallery?batch_id=${b.batch_id}`}>In the gallery</a></td>
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
