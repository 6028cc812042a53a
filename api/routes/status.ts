import { Action } from '../../src/db/entities';
import type { Route } from '../route';
import { actionIdPath } from '../schemas/generate';
import { ref } from '../schemas/shared';
import { forbidden, notFound } from '../errors';
import type { ApiServices, Caller } from '../services';
import type { EntityManager } from 'typeorm';

/** Loads an action of the caller: 404 when it does not exist, 403 when it belongs to another account. */
export async function requireOwnAction(m: EntityManager, caller: Caller, actionId: number): Promise<Action> {
  const action = await m.findOneBy(Action, { id: actionId });
  if (!action) throw notFound(`Action ${actionId}`);
  if (action.accountId !== caller.accountId) throw forbidden(`Action ${actionId}`);
  return action;
}

export function statusRoutes({ db, signer }: ApiServices): Route[] {
  return [
    {
      method: 'get', path: '/status/{action_id}', operationId: 'getActionStatus', tag: 'Status and results',
      summary: 'Status of an action, with a fresh signed result URL when completed',
      params: actionIdPath,
      responses: { 200: { description: 'The action status', schema: ref('ActionStatus') } },
      async handle(ctx, { params }) {
        const action = await requireOwnAction(db.manager, ctx.state.caller, params.action_id);
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
