/** How read-model rows look on the wire (snake_case, ISO timestamps). */
import type { Action, Card, Project } from '../src/db/entities';
import type { HoldStatus } from '../src/db/entities/spark-hold';
import { thumbnailKeyOf } from '../src/media/thumbnails';
import type { UrlSigner } from '../src/storage/signed-urls';

/** ISO 8601 or null; accepts what node-postgres gives for raw queries too. */
export const iso = (date: Date | string | null | undefined) => (date ? new Date(date).toISOString() : null);

export function projectView(p: Project) {
  return {
    id: p.id, name: p.name, product_name: p.productName, category_id: p.categoryId, concept_id: p.conceptId,
    comment: p.comment, source: p.source, created_at: iso(p.createdAt), updated_at: iso(p.updatedAt),
  };
}

/** A fresh signed URL of a completed result's thumbnail, or null (a video, a result stored before thumbnails). */
export function thumbUrl(signer: UrlSigner, a: Pick<Action, 'status' | 'assetPath' | 'hasThumbnail'>, asOf?: Date): string | null {
  return a.status === 'completed' && a.assetPath && a.hasThumbnail ? signer.url(thumbnailKeyOf(a.assetPath), undefined, asOf).url : null;
}

export function actionSummaryView(a: Action, signer: UrlSigner) {
  return {
    id: a.id, card_id: a.cardId, type: a.type, status: a.status, depth: a.depth, parent_action_id: a.parentActionId,
    asset_path: a.assetPath, thumb_url: thumbUrl(signer, a), created_at: iso(a.createdAt), completed_at: iso(a.completedAt),
  };
}

export function cardView(c: Card) {
  return {
    id: c.id, project_id: c.projectId, status: c.status, content_type: c.contentType, aspect_ratio: c.aspectRatio,
    active_action_id: c.activeActionId, created_at: iso(c.createdAt), updated_at: iso(c.updatedAt),
  };
}

/** A card version in card detail: the spec's short form. */
export function cardActionView(a: Action) {
  return { id: a.id, type: a.type, status: a.status, depth: a.depth, parent_action_id: a.parentActionId, asset_path: a.assetPath };
}

/**
 * An action's money (MONEY_PROPERTIES): its price, and its hold's amount under `held` or `charged` by the hold's
 * status (a released hold, or none, shows 0 for both).
 */
export function moneyView(price: number, hold: { hold_status: HoldStatus | null; hold_amount: number | null }) {
  const amount = hold.hold_amount ?? 0;
  return { price, held: hold.hold_status === 'held' ? amount : 0, charged: hold.hold_status === 'charged' ? amount : 0 };
}
