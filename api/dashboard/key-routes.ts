/**
 * The account's API keys, managed only here (the contract has no key endpoint: a key must not change its own rights):
 * list, create (the secret in that one answer), rename, switch `default_grouping`, set a monthly spend limit (owners),
 * revoke. A key of another account answers 404, as an unknown one does.
 */
import {
  accountKey, accountKeys, changeKey, createKey, MAX_ACTIVE_KEYS, revokeAccountKey, sandboxBalance, setKeySpendLimit, TooManyKeys,
} from '../../src/accounts/accounts';
import { notFound, ValidationFailed } from '../../src/errors';
import { DEFAULT_SANDBOX_SPARKS } from '../../src/config';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { dashboardRoute } from './session-guard';

const GROUPINGS = ['api_key_inbox', 'legacy_per_request'];
const keyIdPath = { type: 'object', required: ['key_id'], properties: { key_id: { type: 'integer', minimum: 1, maximum: 2147483647 } } };
const name = { type: 'string', minLength: 1, maxLength: 100 };

export const keySchema = {
  type: 'object', required: ['id', 'name', 'prefix', 'sandbox', 'default_grouping', 'created_at', 'last_used_at', 'revoked_at', 'monthly_spend_limit', 'spent_this_month'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    prefix: { type: 'string', description: 'The first 8 characters of the key' },
    sandbox: { type: 'boolean', description: 'A test key (`ak_test_`): its work runs on the sandbox renderer and uses the sandbox sparks' },
    default_grouping: { type: 'string', enum: GROUPINGS },
    created_at: { type: 'string', format: 'date-time' },
    last_used_at: { type: ['string', 'null'], format: 'date-time', description: 'To the minute' },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    monthly_spend_limit: { type: ['integer', 'null'], description: 'Sparks the key may hold or have charged per calendar month (UTC); null: no limit' },
    spent_this_month: { type: 'integer', description: 'Sparks the key holds or has charged this month (UTC)' },
  },
};

export function keyRoutes({ db, config }: ApiServices): Route[] {
  return [
    dashboardRoute({
      method: 'get', path: '/keys', operationId: 'listKeys', access: 'member',
      summary: 'The account\'s keys (sandbox keys among them), active first, newest first, and the sandbox\'s sparks (null: no sandbox yet)',
      responses: {
        200: {
          description: 'Keys',
          schema: {
            type: 'object', required: ['keys', 'sandbox'],
            properties: {
              keys: { type: 'array', items: keySchema },
              sandbox: {
                type: ['object', 'null'], required: ['balance', 'available', 'holds'],
                properties: { balance: { type: 'integer' }, available: { type: 'integer' }, holds: { type: 'integer' } },
              },
            },
          },
        },
      },
      async handle(ctx, { user }) {
        const [keys, sandbox] = await Promise.all([accountKeys(db, user.accountId), sandboxBalance(db, user.accountId)]);
        ctx.body = { keys, sandbox };
      },
    }),
    dashboardRoute({
      method: 'post', path: '/keys', operationId: 'createKey', access: 'member',
      summary: 'Create a key: its secret is in this answer only. A live key a member creates starts with the smallest monthly spend limit of the account\'s active keys, if any has one',
      body: {
        type: 'object', additionalProperties: false,
        properties: {
          name, default_grouping: { type: 'string', enum: GROUPINGS, default: 'api_key_inbox' },
          sandbox: { type: 'boolean', default: false, description: 'A test key (`ak_test_`) of the account\'s sandbox' },
        },
      },
      responses: {
        201: { description: 'Created', schema: { type: 'object', required: ['key', 'api_key'], properties: { key: keySchema, api_key: { type: 'string', pattern: '^ak_' } } } },
        422: { description: `The account has ${MAX_ACTIVE_KEYS} active keys already (revoke one first)` },
      },
      async handle(ctx, { body, user }) {
        let created;
        try {
          const sandbox = body.sandbox ? { sparks: config.sandboxSparks ?? DEFAULT_SANDBOX_SPARKS } : undefined;
          // A member's live key starts within the owners' limits: see createKey's `limitedLikeOthers`.
          created = await createKey(db, user.accountId, body.name, body.default_grouping, { sandbox, limitedLikeOthers: user.role !== 'owner' });
        } catch (err) {
          if (!(err instanceof TooManyKeys)) throw err;
          throw new ValidationFailed([{ loc: ['body'], msg: `The account already has ${MAX_ACTIVE_KEYS} active ${body.sandbox ? 'sandbox ' : ''}keys; revoke one first`, type: 'maxItems' }]);
        }
        ctx.status = 201;
        ctx.body = { key: created.key, api_key: created.apiKey };
      },
    }),
    dashboardRoute({
      method: 'patch', path: '/keys/{key_id}', operationId: 'changeKey', access: 'member', summary: 'Rename a key or switch its default_grouping',
      params: keyIdPath,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { name, default_grouping: { type: 'string', enum: GROUPINGS } } },
      responses: { 200: { description: 'The key', schema: keySchema }, 404: { description: '`not_found`' } },
      async handle(ctx, { params, body, user }) {
        const key = await changeKey(db, user.accountId, params.key_id, { name: body.name, defaultGrouping: body.default_grouping });
        if (!key) throw notFound(`Key ${params.key_id}`);
        ctx.body = key;
      },
    }),
    dashboardRoute({
      method: 'post', path: '/keys/{key_id}/spend-limit', operationId: 'setKeySpendLimit', access: 'owner',
      summary: 'Set a key\'s monthly spend limit in sparks (null removes it); an owner\'s control, so owners only',
      params: keyIdPath,
      body: {
        type: 'object', additionalProperties: false, required: ['monthly_spend_limit'],
        properties: { monthly_spend_limit: { type: ['integer', 'null'], minimum: 0, maximum: 2147483647 } },
      },
      responses: { 200: { description: 'The key', schema: keySchema }, 404: { description: '`not_found`' } },
      async handle(ctx, { params, body, user }) {
        if (!(await setKeySpendLimit(db, params.key_id, body.monthly_spend_limit, user.accountId))) throw notFound(`Key ${params.key_id}`);
        ctx.body = await accountKey(db, user.accountId, params.key_id);
      },
    }),
    dashboardRoute({
      method: 'post', path: '/keys/{key_id}/revoke', operationId: 'revokeKey', access: 'member',
      summary: 'Revoke a key: every API process refuses it from its next request, and its live-progress streams end',
      params: keyIdPath,
      responses: { 200: { description: 'The key, revoked', schema: keySchema }, 404: { description: '`not_found`' } },
      async handle(ctx, { params, user }) {
        const key = await revokeAccountKey(db, user.accountId, params.key_id);
        if (!key) throw notFound(`Key ${params.key_id}`);
        ctx.body = key;
      },
    }),
  ];
}
