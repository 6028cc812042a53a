/**
 * POST /edit/{action_id}: a new version of a card, made from a completed action's result. The new action sits on
 * the same card one level deeper; the card's active version moves to it once it completes.
 */
import type { EditParams } from '../../src/actions/params';
import { newVersionOf, submitAction } from '../../src/actions/submit';
import { priceOf, readPriceList } from '../../src/billing/pricing';
import { editableSource } from '../../src/generation/prepare';
import type { Caller } from '../../src/services';
import { answerRepeat, idempotencyHeader, send } from '../idempotency';
import { type Route, V1_PREFIX } from '../route';
import { actionIdPath, editRequestSchema } from '../schemas/generate';
import type { ApiServices } from '../services';

export function editRoutes(services: ApiServices): Route[] {
  const { db } = services;
  return [
    {
      method: 'post', path: '/edit/{action_id}', operationId: 'editAction', tag: 'Generation',
      summary: 'Edit a completed photo or card by instruction: a new version of its card (asynchronous)',
      params: actionIdPath,
      body: editRequestSchema,
      headers: [idempotencyHeader],
      responses: {
        200: {
          description: 'Accepted; the edit is pending and its price is held',
          schema: {
            type: 'object', required: ['action_id', 'parent_action_id', 'status', 'poll_url'],
            properties: {
              action_id: { type: 'integer' }, parent_action_id: { type: 'integer' },
              status: { type: 'string', enum: ['pending'] }, poll_url: { type: 'string' },
            },
          },
        },
        400: { description: '`unsupported_parameter`: the source is a video' },
        402: { description: '`insufficient_tokens`; details: available, required. Or `spend_limit_exceeded`: the API key\'s monthly spend limit would be passed; details: limit, spent, required' },
        409: { description: '`action_not_completed` (details: status), `edit_depth_exceeded` (details: max_depth), or `idempotency_conflict`' },
      },
      async handle(ctx, { params, body }: { params: { action_id: number }; body: { instruction: string; webhook_url?: string } }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await answerRepeat(services, ctx, 'v1:edit', { ...body, action_id: params.action_id });
        if (done) return;
        const source = await editableSource(services, caller, params.action_id);
        const editParams: EditParams = { source: source.assetPath!, instruction: body.instruction };
        const response = await submitAction(services, {
          caller, type: 'edit', product: 'edit', price: priceOf(await readPriceList(db), { product: 'edit' }), params: editParams,
          idempotency: claim, webhookUrl: body.webhook_url, clientGroupId: source.clientGroupId ?? undefined,
          placement: newVersionOf(source),
          respond: (placed) => ({
            action_id: placed.actionId, parent_action_id: source.id, status: 'pending' as const, poll_url: `${V1_PREFIX}/status/${placed.actionId}`,
          }),
        });
        send(ctx, response, response.replayed);
      },
    },
  ];
}
