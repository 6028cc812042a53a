/**
 * Webhooks: the account's registered webhooks; register one (its `whsec_` secret shown once, with a copy button) for
 * all events or some, switch one on or off, delete one after a confirmation, and read each one's delivery log
 * (attempts, response codes, timings) with a redeliver button.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, when } from '../api';
import { ConfirmDialog, CopyButton, ErrorNote, useChanges } from './parts';

interface Webhook { id: number; url: string; events: string[]; item_events: boolean; is_active: boolean; created_at: string }
interface Delivery {
  delivery_id: string; event: string; action_id: number | null; batch_id?: string | null; status: 'pending' | 'succeeded' | 'failed' | 'skipped';
  attempts: number; max_attempts: number; last_status_code: number | null; last_error: string | null;
  last_attempt_at: string | null; delivered_at: string | null; created_at: string;
}

export function WebhooksPage() {
  const [hooks, setHooks] = useState<Webhook[]>();
  const [events, setEvents] = useState<string[]>([]);
  const [secret, setSecret] = useState<{ url: string; value: string }>();
  const [confirming, setConfirming] = useState<Webhook>();
  const [open, setOpen] = useState<number>();
  const { error, change } = useChanges(() => api<{ webhooks: Webhook[]; events: string[] }>('GET', '/webhooks').then((r) => {
    setHooks(r.webhooks);
    setEvents(r.events);
  }));
  useEffect(() => { void change(async () => undefined); }, []);

  function register(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    void change(async () => {
      const chosen = form.getAll('events').map(String);
      const created = await api<Webhook & { secret: string }>('POST', '/webhooks', {
        url: form.get('url'), events: chosen.length ? chosen : undefined, item_events: form.get('item_events') === 'on',
      });
      setSecret({ url: created.url, value: created.secret });
      formElement.reset();
    });
  }

  return (
    <section>
      <h1>Webhooks</h1>
      <p class="muted">Each outcome of the events a webhook subscribes to is sent to it, signed with its secret. At most 5.</p>
      <ErrorNote message={error} />
      {secret && (
        <div class="card secret" role="status">
          <h2>The signing secret of {secret.url}</h2>
          <p>Copy it now: it is shown only this once. Verify each delivery's <code>X-Service-Signature</code>, or its Standard Webhooks <code>webhook-signature</code>, with it.</p>
          <code class="key">{secret.value}</code>
          <div class="row"><CopyButton text={secret.value} label="Copy secret" /><button type="button" class="link" onClick={() => setSecret(undefined)}>Done</button></div>
        </div>
      )}
      <form class="card" onSubmit={register} aria-label="Register a webhook">
        <label>HTTPS URL<input name="url" type="url" required maxLength={2000} placeholder="https://example.com/hooks/imagery" /></label>
        <fieldset class="events">
          <legend>Events (none chosen: all)</legend>
          {events.map((name) => <label class="check" key={name}><input type="checkbox" name="events" value={name} />{name}</label>)}
        </fieldset>
        <label class="check"><input type="checkbox" name="item_events" />Also each batch item's own event (a batch's end is batch.completed or batch.failed)</label>
        <div><button type="submit" disabled={(hooks?.length ?? 0) >= 5}>Register webhook</button></div>
      </form>
      {hooks === undefined ? <p aria-busy="true">Loading…</p> : hooks.length === 0 ? <p class="muted">No webhook yet.</p> : (
        <ul class="plain">
          {hooks.map((hook) => (
            <li key={hook.id} class="card">
              <div class="row wrap spread">
                <div>
                  <h2 class="url">{hook.url}</h2>
                  <p class="muted">{hook.events.join(', ')}{hook.item_events ? ' · batch items\' events too' : ''} · since {when(hook.created_at)}</p>
                </div>
                <div class="row">
                  <label class="check"><input type="checkbox" checked={hook.is_active}
                    onChange={(e) => change(() => api('PATCH', `/webhooks/${hook.id}`, { is_active: (e.currentTarget as HTMLInputElement).checked }))} />Active</label>
                  <button type="button" class="secondary" aria-expanded={open === hook.id}
                    onClick={() => setOpen(open === hook.id ? undefined : hook.id)}>Deliveries</button>
                  <button type="button" class="danger" onClick={() => setConfirming(hook)}>Delete</button>
                </div>
              </div>
              {open === hook.id && <DeliveryLog hook={hook} />}
            </li>
          ))}
        </ul>
      )}
      {confirming && (
        <ConfirmDialog title={`Delete the webhook of ${confirming.url}?`} confirm="Delete webhook" onCancel={() => setConfirming(undefined)}
          onConfirm={() => { const hook = confirming; setConfirming(undefined); void change(() => api('DELETE', `/webhooks/${hook.id}`)); }}>
          It receives nothing more, pending retries included.
        </ConfirmDialog>
      )}
    </section>
  );
}

const STATUS = { pending: 'Sending', succeeded: 'Delivered', failed: 'Failed', skipped: 'Skipped' };

/** A webhook's latest deliveries, read again while the log is open; a redelivery reloads it at once. */
function DeliveryLog({ hook }: { hook: Webhook }) {
  const [deliveries, setDeliveries] = useState<Delivery[]>();
  const { error, change } = useChanges(() => api<{ deliveries: Delivery[] }>('GET', `/webhooks/${hook.id}/deliveries?limit=50`)
    .then((r) => setDeliveries(r.deliveries)));
  useEffect(() => { void change(async () => undefined); }, [hook.id]);
  // Open, the log follows new deliveries: read again every 5 s, every 2 s while one is being sent (and again after
  // a read that failed).
  useEffect(() => {
    if (deliveries === undefined && !error) return undefined;
    const timer = setTimeout(() => { void change(async () => undefined); }, deliveries?.some((d) => d.status === 'pending') ? 2000 : 5000);
    return () => clearTimeout(timer);
  }, [deliveries, error]);

  if (deliveries === undefined) return error ? <ErrorNote message={error} /> : <p aria-busy="true">Loading…</p>;
  return (
    <div class="log">
      <ErrorNote message={error} />
      {deliveries.length === 0 ? <p class="muted">Nothing delivered yet.</p> : (
        <table class="list">
          <caption class="sr-only">Deliveries to {hook.url}</caption>
          <thead><tr>
            <th scope="col">Event</th><th scope="col">Action</th><th scope="col">Status</th><th scope="col">Attempts</th>
            <th scope="col">Last answer</th><th scope="col">Created</th><th scope="col">Last attempt</th><th scope="col"><span class="sr-only">Actions</span></th>
          </tr></thead>
          <tbody>
            {deliveries.map((d) => (
              <tr key={d.delivery_id}>
                <td data-label="Event">{d.event}</td>
                <td data-label="Action">{d.action_id ?? (d.batch_id ? <>batch <code>{d.batch_id.slice(0, 8)}</code></> : '')}</td>
                <td data-label="Status"><span class={`state ${d.status}`}>{STATUS[d.status]}</span>{d.delivered_at && <span class="muted"> {when(d.delivered_at)}</span>}</td>
                <td data-label="Attempts">{d.attempts} of {d.max_attempts}</td>
                <td data-label="Last answer">{d.last_status_code ?? (d.attempts ? 'no answer' : '—')}{d.last_error && <span class="muted"> {d.last_error}</span>}</td>
                <td data-label="Created">{when(d.created_at)}</td>
                <td data-label="Last attempt">{when(d.last_attempt_at)}</td>
                <td><button type="button" class="secondary" disabled={d.status === 'pending'}
                  onClick={() => change(() => api('POST', `/webhooks/${hook.id}/deliveries/${d.delivery_id}/redeliver`))}>Redeliver</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
