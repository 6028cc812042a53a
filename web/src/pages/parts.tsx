/** Small pieces every page uses. */
import { useState } from 'preact/hooks';

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
