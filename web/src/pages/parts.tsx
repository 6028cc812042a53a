/** Small pieces every page uses. */
import { useState } from 'preact/hooks';
import { ApiError } from '../api';

/** What to show for a failed call: the service's message, or that it could not be reached. */
export const messageOf = (err: unknown) => (err instanceof ApiError ? err.message : 'The service could not be reached');

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
