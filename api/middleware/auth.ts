import type { Middleware } from 'koa';
import { hashApiKey } from '../../src/domain/accounts';
import { prepared, preparedRow } from '../../src/db/prepared';
import type { DefaultGrouping } from '../../src/db/entities/api-key';
import { AppError } from '../errors';
import type { ApiServices, Caller } from '../services';
import { rateWindowAt, type CountedRequest } from './rate-limit';

/**
 * The key and this request's place in its rate-limit window, in one statement (one round trip): the key is found by
 * the SHA-256 of the secret among the keys not revoked, and only a key found there counts the request. Nothing is
 * cached between requests, so a key revoked by any process is refused by every API process from its next request
 * on, and the count is Postgres's, exact across processes.
 */
const KEY_AND_COUNT = prepared('api_key_and_rate_count', `
  WITH api_key AS (
    SELECT id, account_id, name, default_grouping FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL
  ), counted AS (
    INSERT INTO rate_limit_windows AS w (key_id, window_start, count)
    SELECT id, $2, 1 FROM api_key
    ON CONFLICT (key_id, window_start) DO UPDATE SET count = w.count + 1
    RETURNING count
  )
  SELECT api_key.id, api_key.account_id, api_key.name, api_key.default_grouping, counted.count
    FROM api_key, counted`);

interface KeyRow { id: number; account_id: number; name: string; default_grouping: DefaultGrouping; count: number }

/**
 * `Authorization: Bearer ak_...` on every v1 and v2 endpoint; the caller lands on `ctx.state.caller`, the request's
 * count in its key's window on `ctx.state.counted` (the `rateLimit` middleware that follows answers it).
 */
export function authenticate({ db }: ApiServices): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('Authorization');
    if (!header) throw new AppError(401, 'missing_authorization', 'The Authorization header is required: "Bearer <API key>"');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new AppError(401, 'invalid_api_key', 'The Authorization header must be "Bearer <API key>"');
    const nowSeconds = Date.now() / 1000;
    const window = rateWindowAt(nowSeconds);
    const key = await preparedRow<KeyRow>(db, KEY_AND_COUNT, [hashApiKey(match[1]), window]);
    if (!key) throw new AppError(401, 'invalid_api_key', 'The API key is invalid or revoked');
    const caller: Caller = { accountId: key.account_id, keyId: key.id, keyName: key.name, defaultGrouping: key.default_grouping };
    const counted: CountedRequest = { window, used: key.count, nowSeconds };
    ctx.state.caller = caller;
    ctx.state.counted = counted;
    await next();
  };
}
