/**
 * Status and results: a single action's status with a fresh signed URL, cancel, the results list, and the
 * download redirect.
 */
import { Action, Project } from '../../src/db/entities';
import { actionStatusReader, holdsOf, listActions } from '../../src/actions/store';
import { cancelAction } from '../../src/actions/cancel';
import { AppError } from '../../src/errors';
import { assertOwn, requireOwn } from '../../src/accounts/ownership';
import type { Route } from '../route';
import { actionIdPath } from '../schemas/generate';
import { MONEY_FIELDS, MONEY_PROPERTIES, ref, THUMB_URL_DESCRIPTION } from '../schemas/shared';
import { moneyView, thumbUrl } from '../representations';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { lastEventId, lastEventIdHeaders, lastEventIdQuery, streamActionEvents } from '../live/event-stream';
import { actionEventStreamResponses } from '../live/event-schemas';

const DATE = { type: 'string', maxLength: 10, format: 'date', pattern: '^[12][0-9]{3}-', description: 'YYYY-MM-DD (UTC), years 1000-2999' };

export function statusRoutes({ db, signer, temporal, liveEvents }: ApiServices): Route[] {
  const readActionStatus = actionStatusReader(db);
  /** The signed URL of a completed action's result, fresh on every call. */
  const resultUrl = (action: Pick<Action, 'status' | 'assetPath'>) => {
    const signed = action.status === 'completed' && action.assetPath ? signer.url(action.assetPath) : undefined;
    return { result_url: signed?.url ?? null, result_url_expires_at: signed?.expiresAt.toISOString() ?? null };
  };

  return [
    {
      method: 'get', path: '/status/{action_id}', operationId: 'getActionStatus', tag: 'Status and results',
      summary: 'Status of an action, with a fresh signed result URL when completed',
      params: actionIdPath,
      responses: { 200: { description: 'The action status', schema: ref('ActionStatus') } },
      async handle(ctx, { params }) {
        const row = await readActionStatus(params.action_id);
        const action = assertOwn(row, row?.account_id, ctx.state.caller as Caller, `Action ${params.action_id}`);
        ctx.body = {
          action_id: action.id,
          status: action.status,
          type: action.type,
          ...resultUrl({ status: action.status, assetPath: action.asset_path }),
          error_message: action.error_message,
          created_at: action.created_at.toISOString(),
          completed_at: action.completed_at?.toISOString() ?? null,
          ...moneyView(action.price, action),
        };
      },
    },
    {
      method: 'get', path: '/status/{action_id}/events', operationId: 'streamActionEvents', tag: 'Status and results',
      summary: 'Live progress of an action as Server-Sent Events, from the start or after `Last-Event-ID`; the final event ends the stream',
      params: actionIdPath,
      query: lastEventIdQuery,
      headers: lastEventIdHeaders,
      responses: actionEventStreamResponses('v1'),
      async handle(ctx, { params, query }) {
        const row = await readActionStatus(params.action_id);
        const action = assertOwn(row, row?.account_id, ctx.state.caller as Caller, `Action ${params.action_id}`);
        const after = lastEventId(ctx, query.last_event_id);
        await streamActionEvents(ctx, { db, liveEvents }, action.id, after, async (event) => {
          const final = ['completed', 'failed', 'cancelled'].includes(event.action_status);
          // The final event reads the action once more: its result (signed now) and its error.
          const ended = final ? (await readActionStatus(action.id))! : undefined;
          return {
            event: final ? event.action_status : 'progress',
            final,
            data: {
              action_id: action.id, status: event.action_status, phase: event.phase, attempt: event.attempt,
              provider: event.provider, percent: event.percent, at: event.created_at.toISOString(),
              ...(ended ? { ...resultUrl({ status: ended.status, assetPath: ended.asset_path }), error_message: ended.error_message } : {}),
            },
          };
        });
      },
    },
    {
      method: 'post', path: '/cancel/{action_id}', operationId: 'cancelAction', tag: 'Status and results',
      summary: 'Cancel an action: certain before processing starts, best effort while it runs',
      params: actionIdPath,
      responses: {
        200: {
          description: '`cancelled` says whether the action is now cancelled; `status` is its status after the request',
          schema: {
            type: 'object', required: ['action_id', 'status', 'cancelled', 'message'],
            properties: {
              action_id: { type: 'integer' },
              status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed', 'cancelled'] },
              cancelled: { type: 'boolean' },
              message: { type: 'string' },
            },
          },
        },
      },
      async handle(ctx, { params }) {
        const action = await requireOwn(db.manager, Action, params.action_id, ctx.state.caller, 'Action');
        ctx.body = { action_id: action.id, ...(await cancelAction({ db, temporal }, action)) };
      },
    },
    {
      method: 'get', path: '/results', operationId: 'listResults', tag: 'Status and results',
      summary: 'Actions of the account, newest first, with fresh signed URLs (valid 30 days) for completed ones',
      query: {
        type: 'object',
        properties: {
          type: { type: 'string', enum: ['generate', 'edit', 'video'] },
          status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed', 'cancelled'] },
          created_after: DATE,
          created_before: DATE,
          project_id: { type: 'integer', minimum: 1, maximum: 2147483647 },
          client_group_id: { type: 'string', maxLength: 100 },
          page: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
          page_size: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        },
      },
      responses: {
        200: {
          description: 'A page of results',
          schema: {
            type: 'object', required: ['items', 'total', 'page', 'page_size'],
            properties: {
              items: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['action_id', 'type', 'status', 'project_id', 'card_id', 'created_at', ...MONEY_FIELDS],
                  properties: {
                    action_id: { type: 'integer' }, type: { type: 'string' }, status: { type: 'string' },
                    project_id: { type: 'integer' }, card_id: { type: 'integer' }, parent_action_id: { type: ['integer', 'null'] },
                    depth: { type: 'integer' }, client_group_id: { type: ['string', 'null'] },
                    result_url: { type: ['string', 'null'] }, result_url_expires_at: { type: ['string', 'null'], format: 'date-time' },
                    thumb_url: { type: ['string', 'null'], description: THUMB_URL_DESCRIPTION },
                    error_message: { type: ['string', 'null'] },
                    created_at: { type: 'string', format: 'date-time' }, completed_at: { type: ['string', 'null'], format: 'date-time' },
                    ...MONEY_PROPERTIES,
                  },
                },
              },
              total: { type: 'integer' }, page: { type: 'integer' }, page_size: { type: 'integer' },
            },
          },
        },
        403: { description: '`forbidden`: project_id belongs to another account' },
        404: { description: '`not_found`: project_id does not exist' },
      },
      async handle(ctx, { query }) {
        const caller = ctx.state.caller as Caller;
        // A project filter names a resource: 404 when unknown, 403 when another account's.
        if (query.project_id) await requireOwn(db.manager, Project, query.project_id, caller, 'Project');
        const { rows, total } = await listActions(db, caller.accountId, {
          type: query.type, status: query.status, createdAfter: query.created_after, createdBefore: query.created_before,
          projectId: query.project_id, clientGroupId: query.client_group_id, page: query.page, pageSize: query.page_size,
        });
        const holds = await holdsOf(db, rows.map((a) => a.id));
        ctx.body = {
          items: rows.map((a) => ({
            action_id: a.id, type: a.type, status: a.status, project_id: a.projectId, card_id: a.cardId,
            parent_action_id: a.parentActionId, depth: a.depth, client_group_id: a.clientGroupId,
            ...resultUrl(a), thumb_url: thumbUrl(signer, a), error_message: a.errorMessage,
            created_at: a.createdAt.toISOString(), completed_at: a.completedAt?.toISOString() ?? null,
            ...moneyView(a.price, holds.get(a.id) ?? { hold_status: null, hold_amount: null }),
          })),
          total, page: query.page, page_size: query.page_size,
        };
      },
    },
    {
      method: 'get', path: '/results/{action_id}/download', operationId: 'downloadResult', tag: 'Status and results',
      summary: 'Redirect to the signed result URL when completed',
      params: actionIdPath,
      responses: {
        202: {
          description: 'Not ready yet (pending or processing); `Retry-After` says when to ask again',
          schema: {
            type: 'object', required: ['action_id', 'status', 'message'],
            properties: { action_id: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' } },
          },
          headers: { 'Retry-After': { description: 'Seconds', schema: { type: 'integer' } } },
        },
        302: { description: 'Redirect to the signed result URL', headers: { Location: { description: 'Signed asset URL', schema: { type: 'string' } } } },
        409: { description: '`result_unavailable`: the action failed or was cancelled (details: status)' },
      },
      async handle(ctx, { params }) {
        const action = await requireOwn(db.manager, Action, params.action_id, ctx.state.caller, 'Action');
        if (action.status === 'completed' && action.assetPath) {
          ctx.redirect(signer.url(action.assetPath).url);
          return;
        }
        if (action.status === 'pending' || action.status === 'processing') {
          ctx.status = 202;
          ctx.set('Retry-After', '5');
          ctx.body = { action_id: action.id, status: action.status, message: `The result is not ready yet (${action.status})` };
          return;
        }
        throw new AppError(409, 'result_unavailable', action.status === 'failed'
          ? `The action failed: ${action.errorMessage ?? 'no result'}` : 'The action was cancelled; there is no result', { status: action.status });
      },
    },
  ];
}
