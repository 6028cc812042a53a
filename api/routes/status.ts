import { Action } from '../../src/db/entities';
import type { Route } from '../route';
import { actionIdPath } from '../schemas/generate';
import { ref } from '../schemas/shared';
import { requireOwn } from '../ownership';
import type { ApiServices } from '../services';

export function statusRoutes({ db, signer }: ApiServices): Route[] {
  return [
    {
      method: 'get', path: '/status/{action_id}', operationId: 'getActionStatus', tag: 'Status and results',
      summary: 'Status of an action, with a fresh signed result URL when completed',
      params: actionIdPath,
      responses: { 200: { description: 'The action status', schema: ref('ActionStatus') } },
      async handle(ctx, { params }) {
        const action = await requireOwn(db.manager, Action, params.action_id, ctx.state.caller, 'Action');
        const signed = action.status === 'completed' && action.assetPath ? signer.url(action.assetPath) : undefined;
        ctx.body = {
          action_id: action.id,
          status: action.status,
          type: action.type,
          result_url: signed?.url ?? null,
          result_url_expires_at: signed?.expiresAt.toISOString() ?? null,
          error_message: action.errorMessage,
          created_at: action.createdAt.toISOString(),
          completed_at: action.completedAt?.toISOString() ?? null,
        };
      },
    },
  ];
}
