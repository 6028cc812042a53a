/**
 * The account's work in the dashboard: a gallery of its actions with thumbnails (newest first, paged), and each
 * action's detail (its parameters, price, held, charged, result, the version tree of its card, and the timeline of
 * its events), as one answer and as a live stream that sends the detail again whenever the action moves. An action
 * of another account answers 404, as an unknown one does.
 */
import { actionDetail, actionTimeline, cardVersions, galleryPage } from '../../src/actions/store';
import type { Action } from '../../src/db/entities';
import { notFound } from '../../src/errors';
import { cursorParts, encodeCursor, isPositionTime, isRowId } from '../../src/db/keyset';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { streamSnapshots } from '../live/snapshot-stream';
import { DASHBOARD_STREAMS_PER_USER } from '../live/action-event-hub';
import { iso, moneyView, thumbUrl } from '../representations';
import { pageAnswer, pageQuery, resumeAt } from './paging';
import { dashboardRoute } from './session-guard';

/** Events a detail shows at most, the latest (an action has a handful; a long video's progress, a few dozen). */
const TIMELINE_LIMIT = 200;
/** Versions of a card a detail shows at most, the first. */
const VERSIONS_LIMIT = 100;
/** A detail's signed URLs are made as of the start of the hour, so that a snapshot read again is the same unless the action moved. */
const URL_EPOCH_MS = 3_600_000;
/** A detail stream ends after this long and the page reconnects through the session guard. */
const DETAIL_STREAM_SECONDS = 60;
const DETAIL_MIN_INTERVAL_MS = 500;

const actionIdPath = { type: 'object', required: ['action_id'], properties: { action_id: { type: 'integer', minimum: 1, maximum: 2147483647 } } };
const nullable = (type: string) => ({ type: [type, 'null'] });

const galleryItem = {
  type: 'object', required: ['id', 'type', 'status', 'product_name', 'card_id', 'project_id', 'thumb_url', 'created_at'],
  properties: {
    id: { type: 'integer' }, type: { type: 'string' }, status: { type: 'string' }, product_name: nullable('string'),
    card_id: { type: 'integer' }, project_id: { type: 'integer' }, thumb_url: nullable('string'), created_at: { type: 'string', format: 'date-time' },
  },
};

/** The gallery's filter by batch (`?batch_id=`): its items only. */
function withBatchFilter(query: ReturnType<typeof pageQuery>) {
  return { ...query, properties: { ...query.properties, batch_id: { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', description: 'Only this batch\'s items' } } };
}

/** A gallery cursor: the last row's position (its creation, to the microsecond in UTC) and id. */
function decodeGalleryCursor(cursor: string): { at: string; id: number } | undefined {
  const [at, id] = cursorParts(cursor) ?? [];
  return isPositionTime(at) && isRowId(id) ? { at, id } : undefined;
}

export function galleryRoutes({ db, signer, liveEvents }: ApiServices): Route[] {
  /** The action's detail when it is the account's; else 404. */
  async function detail(accountId: number, actionId: number) {
    const found = await actionDetail(db, actionId);
    if (!found || found.action.accountId !== accountId) throw notFound(`Action ${actionId}`);
    const { action: a, job } = found;
    const [timeline, versions] = await Promise.all([actionTimeline(db, a.id, TIMELINE_LIMIT), cardVersions(db, a.cardId, VERSIONS_LIMIT)]);
    const asOf = new Date(Math.floor(Date.now() / URL_EPOCH_MS) * URL_EPOCH_MS);
    const result = a.status === 'completed' && a.assetPath ? signer.url(a.assetPath, undefined, asOf).url : null;
    const { inputs: _inputs, source: _source, input: _input, finalFrame: _finalFrame, designReference: _design, wholeInputs: _whole, ...parameters } = a.params;
    return {
      id: a.id, type: a.type, status: a.status, card_id: a.cardId, project_id: a.projectId, parent_action_id: a.parentActionId, depth: a.depth,
      parameters, error_message: a.errorMessage, result_url: result, result_kind: a.product === 'video' ? 'video' : 'image',
      thumb_url: thumbUrl(signer, a, asOf), ...moneyView(a.price, found), job,
      created_at: iso(a.createdAt), completed_at: iso(a.completedAt),
      timeline: timeline.map((e) => ({ ...e, created_at: iso(e.created_at) })),
      versions: versions.map((v: Action) => ({
        id: v.id, type: v.type, status: v.status, depth: v.depth, parent_action_id: v.parentActionId,
        instruction: typeof v.params.instruction === 'string' ? v.params.instruction : null, thumb_url: thumbUrl(signer, v, asOf), created_at: iso(v.createdAt),
      })),
    };
  }

  return [
    dashboardRoute({
      method: 'get', path: '/gallery', operationId: 'gallery', access: 'member', summary: 'The account\'s actions with their thumbnails, newest first, a page at a time',
      query: withBatchFilter(pageQuery(24, 100)),
      responses: { 200: pageAnswer('A page of the gallery and the cursor of the next (null at the end)', 'items', galleryItem) },
      async handle(ctx, { query, user }) {
        // Another account's batch (or an unknown one) shows nothing, as an empty batch does.
        const rows = await galleryPage(db, user.accountId, resumeAt(query.cursor, decodeGalleryCursor), query.limit + 1, query.batch_id);
        const page = rows.slice(0, query.limit);
        const last = page[page.length - 1];
        ctx.body = {
          items: page.map((r) => ({
            id: r.id, type: r.type, status: r.status, product_name: r.product_name, card_id: r.card_id, project_id: r.project_id,
            thumb_url: thumbUrl(signer, { status: r.status, assetPath: r.asset_path, hasThumbnail: r.has_thumbnail }), created_at: iso(r.created_at),
          })),
          next_cursor: rows.length > query.limit && last ? encodeCursor([last.position, last.id]) : null,
        };
      },
    }),
    dashboardRoute({
      method: 'get', path: '/actions/{action_id}', operationId: 'actionDetail', access: 'member',
      summary: 'An action: parameters, price, held, charged, result, its card\'s versions and its event timeline',
      params: actionIdPath,
      responses: { 200: { description: 'The action' }, 404: { description: '`not_found`' } },
      async handle(ctx, { params, user }) {
        ctx.body = await detail(user.accountId, params.action_id);
      },
    }),
    dashboardRoute({
      method: 'get', path: '/actions/{action_id}/events', operationId: 'actionDetailEvents', access: 'member',
      summary: `The action's detail as Server-Sent Events: an \`action\` event at once and whenever it changes; ends after ${DETAIL_STREAM_SECONDS} s (reconnect)`,
      params: actionIdPath,
      responses: {
        200: { description: '`text/event-stream`' }, 404: { description: '`not_found`' },
        429: { description: `\`too_many_streams\`: this user holds ${DASHBOARD_STREAMS_PER_USER} dashboard streams open in this process` },
      },
      async handle(ctx, { params, user }) {
        await detail(user.accountId, params.action_id); // 404 before the stream opens
        await streamSnapshots(ctx, {
          event: 'action',
          subscribe: (subscriber) => liveEvents.subscribeActionAs(params.action_id, user.userId, subscriber),
          read: () => detail(user.accountId, params.action_id),
          heartbeatSeconds: liveEvents.limits.heartbeatSeconds,
          maxSeconds: Math.min(DETAIL_STREAM_SECONDS, liveEvents.limits.maxSeconds),
          minIntervalMs: DETAIL_MIN_INTERVAL_MS,
        });
      },
    }),
  ];
}
