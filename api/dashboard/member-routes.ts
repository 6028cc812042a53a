/**
 * The people of the account, for its owners only: list, invite (a one-time link that sets the password), change a
 * role, remove (their sessions end at once). An invitation answers the same whether or not the email already has a
 * user elsewhere, so an owner learns nothing about other accounts.
 */
import { AppError, notFound } from '../../src/errors';
import { linkUrl } from '../../src/users/links';
import { changeUser, inviteUser, LastOwner, listUsers, ROLES, type UserRow } from '../../src/users/users';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { dashboardRoute } from './session-guard';

const userIdPath = { type: 'object', required: ['user_id'], properties: { user_id: { type: 'integer', minimum: 1, maximum: 2147483647 } } };
const memberSchema = {
  type: 'object', required: ['id', 'email', 'role', 'active', 'created_at'],
  properties: {
    id: { type: 'integer' }, email: { type: 'string' }, role: { type: 'string', enum: [...ROLES] },
    active: { type: 'boolean', description: 'Whether the user has set a password (an invitation not yet accepted: false)' },
    created_at: { type: 'string', format: 'date-time' },
  },
};
const view = ({ account_id: _, ...user }: UserRow) => user;
const lastOwner = () => new AppError(409, 'last_owner', 'An account keeps at least one owner who can sign in');

export function memberRoutes({ db, config, linkMail }: ApiServices): Route[] {
  return [
    dashboardRoute({
      method: 'get', path: '/members', operationId: 'listMembers', access: 'owner', summary: 'The people of the account',
      responses: { 200: { description: 'Members', schema: { type: 'object', required: ['members'], properties: { members: { type: 'array', items: memberSchema } } } } },
      async handle(ctx, { user }) {
        ctx.body = { members: (await listUsers(db, user.accountId)).map(view) };
      },
    }),
    dashboardRoute({
      method: 'post', path: '/members', operationId: 'inviteMember', access: 'owner', summary: 'Invite someone: a one-time link sets their password',
      body: {
        type: 'object', required: ['email'], additionalProperties: false,
        properties: { email: { type: 'string', format: 'email', minLength: 3, maxLength: 254 }, role: { type: 'string', enum: [...ROLES], default: 'member' } },
      },
      responses: { 202: { description: 'The invitation is on its way (the same answer for an email that has a user elsewhere)' } },
      async handle(ctx, { body, user }) {
        const invited = await inviteUser(db, { accountId: user.accountId, email: body.email, role: body.role });
        if (invited !== 'taken') linkMail.send({ to: body.email, userId: invited.userId, purpose: 'invite', link: linkUrl(config.publicBaseUrl, invited.token) });
        ctx.status = 202;
        ctx.body = { message: `An invitation is on its way to ${body.email}` };
      },
    }),
    dashboardRoute({
      method: 'patch', path: '/members/{user_id}', operationId: 'changeMember', access: 'owner', summary: 'Change a member\'s role',
      params: userIdPath,
      body: { type: 'object', required: ['role'], additionalProperties: false, properties: { role: { type: 'string', enum: [...ROLES] } } },
      responses: { 200: { description: 'The member', schema: memberSchema }, 404: { description: '`not_found`' }, 409: { description: '`last_owner`' } },
      async handle(ctx, { params, body, user }) {
        const changed = await changeUser(db, user.accountId, params.user_id, { role: body.role }).catch((err) => {
          throw err instanceof LastOwner ? lastOwner() : err;
        });
        if (!changed || changed === 'removed') throw notFound(`User ${params.user_id}`);
        ctx.body = view(changed);
      },
    }),
    dashboardRoute({
      method: 'delete', path: '/members/{user_id}', operationId: 'removeMember', access: 'owner', summary: 'Remove someone from the account (their sessions end)',
      params: userIdPath,
      responses: { 204: { description: 'Removed' }, 404: { description: '`not_found`' }, 409: { description: '`last_owner`' } },
      async handle(ctx, { params, user }) {
        const removed = await changeUser(db, user.accountId, params.user_id, { remove: true }).catch((err) => {
          throw err instanceof LastOwner ? lastOwner() : err;
        });
        if (!removed) throw notFound(`User ${params.user_id}`);
        ctx.status = 204;
      },
    }),
  ];
}
