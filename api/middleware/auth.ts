import type { Middleware } from 'koa';
import { hashApiKey } from '../../src/domain/accounts';
import { sqlRow } from '../../src/db/sql';
import { AppError } from '../errors';
import type { ApiServices, Caller } from '../services';

/** `Authorization: Bearer ak_...` on every v1 and v2 endpoint; the caller lands on `ctx.state.caller`. */
export function authenticate({ db }: ApiServices): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('Authorization');
    if (!header) throw new AppError(401, 'missing_authorization', 'The Authorization header is required: "Bearer <API key>"');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new AppError(401, 'invalid_api_key', 'The Authorization header must be "Bearer <API key>"');
    const key = await sqlRow(db.manager,
      `SELECT id, account_id, name, default_grouping FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
      [hashApiKey(match[1])]);
    if (!key) throw new AppError(401, 'invalid_api_key', 'The API key is invalid or revoked');
    const caller: Caller = { accountId: key.account_id, keyId: key.id, keyName: key.name, defaultGrouping: key.default_grouping };
    ctx.state.caller = caller;
    await next();
  };
}
