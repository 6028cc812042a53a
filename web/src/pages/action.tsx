/**
 * An action: its result (open or download), parameters, price, held and charged, its card's versions (the edit tree),
 * and the timeline of its events, kept live by the action's event stream.
 */
import { when } from '../api';
import { BASE } from '../paths';
import { ErrorNote, useLiveSnapshot } from './parts';

interface Version { id: number; type: string; status: string; depth: number; parent_action_id: number | null; instruction: string | null; thumb_url: string | null; created_at: string }
interface TimelineEvent { seq: number; action_status: string; job_status: string | null; phase: string | null; attempt: number | null; provider: string | null; percent: number | null; created_at: string }
interface Detail {
  id: number; type: string; status: string; card_id: number; project_id: number; parameters: Record<string, unknown>; error_message: string | null;
  result_url: string | null; result_kind: 'image' | 'video'; thumb_url: string | null; price: number; held: number; charged: number;
  job: { id: string; status: string; phase: string; attempts: number } | null; created_at: string; completed_at: string | null;
  timeline: TimelineEvent[]; versions: Version[];
}

export function ActionPage({ id }: { id: string }) {
  const { view: detail, error } = useLiveSnapshot<Detail>(`/actions/${encodeURIComponent(id)}`, 'action');
  if (error) return <section><h1>Action {id}</h1><ErrorNote message={error} /></section>;
  if (!detail) return <section><h1>Action {id}</h1><p aria-busy="true">Loading…</p></section>;
  return (
    <section>
      <h1>Action {detail.id} <span class={`state ${detail.status}`}>{detail.status}</span></h1>
      <p class="muted">{detail.type} · created {when(detail.created_at)}{detail.completed_at && ` · finished ${when(detail.completed_at)}`}</p>
      {detail.error_message && <p class="error">{detail.error_message}</p>}
      <div class="detail">
        <div class="card">
          {detail.result_url ? (
            <>
              {detail.result_kind === 'video'
                ? <video src={detail.result_url} controls width={320} aria-label="The result" />
                : <img src={detail.thumb_url ?? detail.result_url} alt="The result" width={320} />}
              <p class="row wrap"><a href={detail.result_url} target="_blank" rel="noopener noreferrer">Open the result</a><a href={detail.result_url} download>Download</a></p>
            </>
          ) : <p class="muted">No result yet.</p>}
        </div>
        <dl class="card pairs">
          <dt>Price</dt><dd>{detail.price} sparks</dd>
          <dt>Held</dt><dd>{detail.held}</dd>
          <dt>Charged</dt><dd>{detail.charged}</dd>
          {detail.job && <><dt>Job</dt><dd><code>{detail.job.id}</code> {detail.job.status}, {detail.job.phase}, attempt {detail.job.attempts}</dd></>}
          {Object.entries(detail.parameters).map(([name, value]) => (
            <><dt key={name}>{name}</dt><dd>{typeof value === 'object' ? JSON.stringify(value) : String(value)}</dd></>
          ))}
        </dl>
      </div>
      <h2>Versions of this card</h2>
      <ol class="versions">
        {detail.versions.map((v) => (
          <li key={v.id} style={{ marginLeft: `${v.depth * 1.25}rem` }} aria-current={v.id === detail.id ? 'true' : undefined}>
            <a href={`${BASE}/actions/${v.id}`}>{v.depth === 0 ? 'First generation' : `Edit: ${v.instruction ?? ''}`}</a>
            <span class="muted"> {v.status} · {when(v.created_at)}</span>
          </li>
        ))}
      </ol>
      <h2>Timeline</h2>
      <ol class="timeline">
        {detail.timeline.map((e) => (
          <li key={e.seq}>
            <span class="muted">{when(e.created_at)}</span> {e.action_status}
            {e.job_status && ` · job ${e.job_status}`}{e.phase && ` (${e.phase})`}{e.attempt ? ` · attempt ${e.attempt}` : ''}
            {e.provider && ` · ${e.provider}`}{e.percent !== null && ` · ${e.percent}%`}
          </li>
        ))}
      </ol>
    </section>
  );
}
