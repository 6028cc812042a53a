/** Gallery: the account's photos, cards, edits and videos as thumbnails, newest first, a page at a time; or one batch's (`?batch_id=`). */
import { useLocation } from 'preact-iso';
import { when } from '../api';
import { BASE } from '../paths';
import { ErrorNote, usePagedList } from './parts';

interface Item {
  id: number; type: 'generate' | 'edit' | 'video'; status: string; product_name: string | null; card_id: number; project_id: number;
  thumb_url: string | null; created_at: string;
}

const KIND = { generate: 'Photo or card', edit: 'Edit', video: 'Video' };

export function GalleryPage() {
  const { query } = useLocation();
  const batch = query.batch_id;
  const { items, error, busy, more } = usePagedList<Item>(`/gallery?limit=24${batch ? `&batch_id=${encodeURIComponent(batch)}` : ''}`, 'items');
  return (
    <section>
      <h1>Gallery</h1>
      {batch && <p>Items of batch <code>{batch}</code> · <a href={`${BASE}/gallery`}>Show everything</a></p>}
      <ErrorNote message={error} />
      {items === undefined ? <p aria-busy="true">Loading…</p> : items.length === 0 ? <p class="muted">Nothing made yet.</p> : (
        <>
          <ul class="gallery">
            {items.map((item) => (
              <li key={item.id}>
                <a href={`${BASE}/actions/${item.id}`} class="tile">
                  {item.thumb_url
                    ? <img src={item.thumb_url} alt={item.product_name ?? `Action ${item.id}`} loading="lazy" width={160} height={160} />
                    : <span class="placeholder" aria-hidden="true">{item.type === 'video' ? '▶' : '…'}</span>}
                  <span class="caption">
                    <strong>{item.product_name ?? `Action ${item.id}`}</strong>
                    <span class="muted">{KIND[item.type]} · <span class={`state ${item.status}`}>{item.status}</span></span>
                    <span class="muted">{when(item.created_at)}</span>
                  </span>
                </a>
              </li>
            ))}
          </ul>
          {more && <p><button type="button" class="secondary" disabled={busy} onClick={more}>Show older</button></p>}
        </>
      )}
    </section>
  );
}
