/** Small pieces every page uses. */
import { useEffect, useState } from 'preact/hooks';
import { API, api, ApiError } from '../api';

/** What to show for a failed call: the service's message, or that it could not be reached. */
export const messageOf = (err: unknown) => (err instanceof ApiError ? err.message : 'The service could not be reached');

/**
 * Changes to a list on the page: each run with its failure's message kept to show, then the list loaded again as it
 * now is (after a refusal too, so that a control shows what was kept). `change(async () => {})` just loads it.
 */
export function useChanges(load: () => Promise<unknown>) {
  const [error, setError] = useState<string>();
  async function change(run: () => Promise<unknown>) {
    setError(undefined);
    try {
      await run();
    } catch (err) {
      setError(messageOf(err));
    }
    await load().catch((err: unknown) => setError(messageOf(err)));
  }
  return { error, change };
}

/** A form's submission: busy while it runs, its failure's message kept to show. */
export function useSubmission() {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  async function submit(work: () => Promise<unknown>) {
    setBusy(true);
    setError(undefined);
    try {
      await work();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }
  return { error, setError, busy, submit };
}

export function ErrorNote({ message }: { message?: string }) {
  return message ? <p role="alert" class="error">{message}</p> : null;
}

/** A button that copies `text`, saying so for a moment. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button type="button" class="secondary" onClick={async () => {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    }}>{copied ? 'Copied' : label}</button>
  );
}

/** A confirmation over the page: what will happen, the button that does it, and Cancel. */
export function ConfirmDialog({ title, children, confirm, onConfirm, onCancel }: {
  title: string; children: preact.ComponentChildren; confirm: string; onConfirm: () => void; onCancel: () => void;
}) {
  return (
    <div class="dialog" role="alertdialog" aria-modal="true" aria-labelledby="dialog-title">
      <div class="card narrow">
        <h2 id="dialog-title">{title}</h2>
        <p>{children}</p>
        <div class="row">
          <button type="button" class="danger" onClick={onConfirm}>{confirm}</button>
          <button type="button" class="secondary" onClick={onCancel}>Cancel</button>
        </div>
      </div>
    </div>
  );
}

/**
 * A value shown with a button (`action`, read out as `actionLabel`) that turns it into a one-field form; Save hands
 * `onSave` the field's trimmed text. Without `onSave` the value is shown alone.
 */
export function InlineEdit({ shown, action, actionLabel, input, onSave }: {
  shown: preact.ComponentChildren; action: string; actionLabel: string; input: preact.InputHTMLAttributes<HTMLInputElement>;
  onSave?: (text: string) => void;
}) {
  const [editing, setEditing] = useState(false);
  if (!editing || !onSave) {
    return <span class="row">{shown}{onSave && <button type="button" class="link" onClick={() => setEditing(true)} aria-label={actionLabel}>{action}</button>}</span>;
  }
  return (
    <form class="row" onSubmit={(e) => {
      e.preventDefault();
      const text = String(new FormData(e.currentTarget as HTMLFormElement).get('value') ?? '').trim();
      setEditing(false);
      onSave(text);
    }}>
      <input name="value" {...input} autoFocus />
      <button type="submit" class="secondary">Save</button>
    </form>
  );
}

/**
 * A list the service pages by cursor (`{[field]: T[], next_cursor}`): the first page at once, `more()` appends the
 * next; a failure's message kept to show.
 */
export function usePagedList<T>(path: string, field: string) {
  const [items, setItems] = useState<T[]>();
  const [next, setNext] = useState<string | null>(null);
  const { error, busy, submit } = useSubmission();
  const load = (cursor?: string) => submit(async () => {
    const page = await api<Record<string, unknown> & { next_cursor: string | null }>('GET', `${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const got = page[field] as T[];
    setItems((shown) => (cursor ? [...(shown ?? []), ...got] : got));
    setNext(page.next_cursor);
  });
  useEffect(() => { void load(); }, [path]);
  return { items, error, busy, more: next ? () => load(next) : undefined };
}

/**
 * A view kept live by its snapshot stream (`${path}/events`, events named `event`): each event is the whole view.
 * When the browser gives the stream up (the server refused it), one plain read of `path` says why (a 401 signs
 * out, a 404 shows as the error) and, unless it was one of those two, the stream is opened again 5 s later.
 */
export function useLiveSnapshot<T>(path: string, event: string): { view?: T; error?: string } {
  const [view, setView] = useState<T>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    setView(undefined);
    const open = () => {
      source = new EventSource(`${API}${path}/events`);
      source.addEventListener(event, (e) => { setError(undefined); setView(JSON.parse((e as MessageEvent<string>).data)); });
      source.onerror = () => {
        if (source?.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
        api<T>('GET', path).then(
          (read) => { setView(read); retry = setTimeout(open, 5000); },
          (err) => {
            setError(messageOf(err));
            if (!(err instanceof ApiError && (err.status === 401 || err.status === 404))) retry = setTimeout(open, 5000);
          },
        );
      };
    };
    open();
    return () => { source?.close(); clearTimeout(retry); };
  }, [path, event]);
  return { view, error };
}
