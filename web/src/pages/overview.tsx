/**
 * Overview: the account's sparks (balance, available, held), today's helper calls against the free limit, and the
 * latest actions and jobs with their status, kept live by the overview's event stream (no reload).
 */
import { when } from '../api';
import { BASE } from '../paths';
import { ErrorNote, useLiveSnapshot } from './parts';

export interface LatestAction {
  id: number; type: 'generate' | 'edit' | 'video'; status: 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';
  percent: number | null; product_name: string | null; job_id: string | null; phase: string | null; created_at: string; completed_at: string | null;
}
interface Overview {
  balance: number; available: number; held: number; helpers: { used_today: number; free_limit: number }; latest: LatestAction[];
}

const TYPES = { generate: 'Photo or card', edit: 'Edit', video: 'Video' };

export function OverviewPage() {
  const { view: overview, error } = useLiveSnapshot<Overview>('/overview', 'overview');
  return (
    <section>
      <h1>Overview</h1>
      <ErrorNote message={error} />
      {overview === undefined ? <p aria-busy="true">Loading…</p> : (
        <>
          <dl class="figures">
            <div class="card"><dt>Balance</dt><dd>{overview.balance}</dd></div>
            <div class="card"><dt>Available</dt><dd>{overview.available}</dd></div>
            <div class="card"><dt>Held</dt><dd>{overview.held}</dd></div>
            <div class="card"><dt>Helper calls today</dt><dd>{overview.helpers.used_today} <span class="muted">of {overview.helpers.free_limit} free</span></dd></div>
          </dl>
          <h2>Latest actions and jobs</h2>
          {overview.latest.length === 0 ? <p class="muted">Nothing yet: generate a photo with an API key and it shows here.</p> : (
            <table class="list">
              <caption class="sr-only">Latest actions and jobs</caption>
              <thead><tr><th scope="col">Action</th><th scope="col">Kind</th><th scope="col">Product</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Finished</th></tr></thead>
              <tbody>
                {overview.latest.map((a) => (
                  <tr key={a.id}>
                    <td data-label="Action"><a href={`${BASE}/actions/${a.id}`}>{a.id}</a>{a.job_id && <span class="muted"> job {a.job_id.slice(0, 8)}</span>}</td>
                    <td data-label="Kind">{TYPES[a.type]}</td>
                    <td data-label="Product">{a.product_name ?? '—'}</td>
                    <td data-label="Status"><Status action={a} /></td>
                    <td data-label="Created">{when(a.created_at)}</td>
                    <td data-label="Finished">{when(a.completed_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}

function Status({ action }: { action: LatestAction }) {
  const detail = action.status === 'processing' ? [action.phase, action.percent !== null ? `${action.percent}%` : null].filter(Boolean).join(', ') : '';
  return <span class={`state ${action.status}`}>{action.status}{detail && <span class="muted"> ({detail})</span>}</span>;
}
