/**
 * Status and results: a single action's status with a fresh signed URL, cancel, the results list, and the
 * download redirect.
 */
import { Action, Project } from '../../src/db/entities';
import { prepared, preparedRow } from '../../src/db/prepared';
import { cancelAction } from '../../src/actions/cancel';
import { AppError } from '../../src/errors';
import { assertOwn, requireOwn } from '../../src/accounts/ownership';
import type { Route } from '../route';
import { actionIdPath } from '../schemas/generate';
import { MONEY_FIELDS, MONEY_PROPERTIES, ref } from '../schemas/shared';
import { moneyView } from '../representations';
import type { HoldStatus } from '../../src/db/entities/spark-hold';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { lastEventId, lastEventIdHeaders, lastEventIdQuery, streamActionEvents } from '../live/event-stream';
import { actionEventStreamResponses } from '../live/event-schemas';

/** What a status poll shows of an action, by its primary key: only the columns the answer needs. */
const ACTION_STATUS = prepared('action_status',
  `SELECT a.id, a.account_id, a.status, a.type, a.asset_path, a.error_message, a.created_at, a.completed_at, a.price,
          h.status AS hold_status, h.amount AS hold_amount
     FROM actions a LEFT JOIN spark_holds h ON h.action_id = a.id WHERE a.id = $1`);

interface ActionStatusRow {
  id: number; account_id: number; status: Action['status']; type: Action['type']; asset_path: string | null;
  error_message: string | null; created_at: Date; completed_at: Date | null; price: number;
  hold_status: HoldStatus | null; hold_amount: number | null;
}

const DATE = { type: 'string', maxLength: 10, format: 'date', pattern: '^[12][0-9]{3}-', description: 'YYYY-MM-DD (UTC), years 1000-2999' };

export function statusRoutes({ db, signer, temporal, liveEvents }: ApiServices): Route[] {
  /** The signed URL of a completed action's result, fresh on every call. */
  const resultUrl = (action: Pick<Action, 'status' | 'assetPath'>) => {
    const signed = action.status === 'completed' && action.assetPath ? signer.url(action.assetPath) : undefined;
    return { result_url: signed?.url ?? null, result_url_expires_at: signed?.expiresAt.toISOString() ?? null };
  };

  /** The holds of a page of actions, by the unique action_id: one indexed read, none for an empty page. */
  const holdsOf = async (actionIds: number[]) => {
    const rows: { action_id: number; hold_status: HoldStatus; hold_amount: number }[] = actionIds.length === 0 ? [] : await db.query(
      'SELECT action_id, status AS hold_status, amount AS hold_amount FROM spark_holds WHERE action_id = ANY($1::int[])', [actionIds]);
    return new Map(rows.map((r) => [r.action_id, r]));
  };

  return [
    {
      method: 'get', path: '/status/{action_id}', operationId: 'getActionStatus', tag: 'Status and results',
      summary: 'Status of an action, with a fresh signed result URL when completed',
      params: actionIdPath,
      responses: { 200: { description: 'The action status', schema: ref('ActionStatus') } },
      async handle(ctx, { params }) {
        const row = await preparedRow<ActionStatusRow>(db, ACTION_STATUS, [params.action_id]);
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
        const row = await preparedRow<ActionStatusRow>(db, ACTION_STATUS, [params.action_id]);
        const action = assertOwn(row, row?.account_id, ctx.state.caller as Caller, `Action ${params.action_id}`);
        const after = lastEventId(ctx, query.last_event_id);
        await streamActionEvents(ctx, { db, liveEvents }, action.id, after, async (event) => {
          const final = ['completed', 'failed', 'cancelled'].includes(event.action_status);
          // The final event reads the action once more: its result (signed now) and its error.
          const ended = final ? (await preparedRow<ActionStatusRow>(db, ACTION_STATUS, [action.id]))! : undefined;
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
        const q = db.manager.createQueryBuilder(Action, 'a').where('a.accountId = :account', { account: caller.accountId });
        if (query.type) q.andWhere('a.type = :type', { type: query.type });
        if (query.status) q.andWhere('a.status = :status', { status: query.status });
        if (query.created_after) q.andWhere(`a.createdAt >= (:after::date AT TIME ZONE 'UTC')`, { after: query.created_after });
        if (query.created_before) q.andWhere(`a.createdAt < (:before::date AT TIME ZONE 'UTC')`, { before: query.created_before });
        if (query.project_id) {
          await requireOwn(db.manager, Project, query.project_id, caller, 'Project'); // 404 unknown, 403 another account's
          q.andWhere('a.projectId = :project', { project: query.project_id });
        }
        if (query.client_group_id !== undefined) q.andWhere('a.clientGroupId = :group', { group: query.client_group_id });
        const [rows, total] = await q.orderBy('a.createdAt', 'DESC').addOrderBy('a.id', 'DESC')
          .skip((query.page - 1) * query.page_size).take(query.page_size).getManyAndCount();
        const holds = await holdsOf(rows.map((a) => a.id));
        ctx.body = {
          items: rows.map((a) => ({
            action_id: a.id, type: a.type, status: a.status, project_id: a.projectId, card_id: a.cardId,
            parent_action_id: a.parentActionId, depth: a.depth, client_group_id: a.clientGroupId,
            ...resultUrl(a), error_message: a.errorMessage,
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
