/**
 * Try it: upload a product photo and start a photo, a card or a video from the page, attributed to one of the
 * account's keys, through the same acceptance as the API; then its detail page follows it to the end.
 */
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api } from '../api';
import { BASE } from '../paths';
import { ErrorNote, messageOf, useSubmission } from './parts';

interface Options { keys: { id: number; name: string; prefix: string }[]; categories: { id: string; name: string }[] }
type Product = 'photo' | 'card' | 'video';

/** The file's bytes as base64 (what the API's `data` takes). */
function base64Of(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(new Error('The file could not be read'));
    reader.readAsDataURL(file);
  });
}

export function TryPage() {
  const { route } = useLocation();
  const [options, setOptions] = useState<Options>();
  const [loadError, setLoadError] = useState<string>();
  const [product, setProduct] = useState<Product>('photo');
  const { error, busy, submit } = useSubmission();
  useEffect(() => { api<Options>('GET', '/try').then(setOptions, (err) => setLoadError(messageOf(err))); }, []);

  function start(event: Event) {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    void submit(async () => {
      const file = form.get('photo') as File;
      const image = { data: await base64Of(file), media_type: file.type || 'image/jpeg' };
      const named = (field: string) => String(form.get(field) ?? '').trim() || undefined;
      const request = product === 'video'
        ? { image, scenario: named('scenario') }
        : { images: [image], product_name: named('product_name'), category_id: named('category_id'), ...(product === 'card' ? { style: form.get('style') } : {}) };
      const accepted = await api<{ action_id: number }>('POST', `/try/${product}`, { key_id: Number(form.get('key_id')), request });
      route(`${BASE}/actions/${accepted.action_id}`);
    });
  }

  if (loadError) return <section><h1>Try it</h1><ErrorNote message={loadError} /></section>;
  if (!options) return <section><h1>Try it</h1><p aria-busy="true">Loading…</p></section>;
  return (
    <section>
      <h1>Try it</h1>
      <p class="muted">Start a generation from a product photo, as the API would for the key you choose: its price is held now and charged when it is done.</p>
      {options.keys.length === 0 ? <p>Create an API key first: the work is attributed to one. <a href={`${BASE}/keys`}>API keys</a></p> : (
        <form class="card" onSubmit={start} aria-label="Start a generation">
          <fieldset class="events">
            <legend>Make</legend>
            {(['photo', 'card', 'video'] as const).map((p) => (
              <label class="check" key={p}><input type="radio" name="product" value={p} checked={product === p} onChange={() => setProduct(p)} />{{ photo: 'A styled photo', card: 'A marketing card', video: 'A short video' }[p]}</label>
            ))}
          </fieldset>
          <label>Product photo<input name="photo" type="file" accept="image/jpeg,image/png,image/webp" required /></label>
          {product === 'video' ? <label>Scenario (optional)<input name="scenario" maxLength={1000} placeholder="a slow turn on a white table" /></label> : (
            <>
              <label>Product name (optional: detected when left out)<input name="product_name" maxLength={200} /></label>
              <label>Category (optional)
                <select name="category_id"><option value="">Detect it</option>{options.categories.map((c) => <option value={c.id}>{c.name}</option>)}</select>
              </label>
              {product === 'card' && <label>Style<select name="style"><option value="infographic">Infographic</option><option value="cinematic">Cinematic</option></select></label>}
            </>
          )}
          <label>As the key<select name="key_id">{options.keys.map((k) => <option value={k.id}>{k.name} ({k.prefix}…)</option>)}</select></label>
          <ErrorNote message={error} />
          <div><button type="submit" disabled={busy}>{busy ? 'Starting…' : 'Start'}</button></div>
        </form>
      )}
    </section>
  );
}
