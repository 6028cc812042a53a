import type { Middleware } from 'koa';
import { hashApiKey, isSandboxKey } from '../../src/accounts/accounts';
import { AppError, ValidationFailed } from '../../src/errors';
import { isSandboxScenario, SANDBOX_SCENARIOS, type SandboxScenario } from '../../src/providers/sandbox';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { CountedKeyLookup } from './counted-key-lookup';

/**
 * `Authorization: Bearer ak_...` on every v1 and v2 endpoint; the caller lands on `ctx.state.caller`, the request's
 * number in its key's rate-limit window on `ctx.state.counted` (the `rateLimit` middleware that follows answers it).
 * Nothing is cached between requests: the key and the count come from Postgres in one statement (see
 * CountedKeyLookup), so a key revoked by the operator is refused by every API process from its next request on.
 * A test key (`ak_test_`) makes a sandbox caller, whose request may ask for a failure drill (`X-Sandbox-Scenario`).
 */
const SCENARIO_HEADER = 'X-Sandbox-Scenario';

/**
 * The drill a request asks for: only test keys may (400 `unsupported_parameter` for a live key), and only a known
 * one (422). No header (or an empty one): none.
 */
function sandboxScenario(header: string, sandbox: boolean): SandboxScenario | undefined {
  if (!header) return undefined;
  if (!sandbox) throw new AppError(400, 'unsupported_parameter', `${SCENARIO_HEADER} is for sandbox keys (ak_test_) only`);
  if (!isSandboxScenario(header)) {
    throw new ValidationFailed([{ loc: ['header', SCENARIO_HEADER], msg: `must be one of ${SANDBOX_SCENARIOS.join(', ')}`, type: 'enum' }]);
  }
  return header;
}

export function authenticate({ db }: ApiServices): Middleware {
  const keys = new CountedKeyLookup(db);
  return async (ctx, next) => {
    const header = ctx.get('Authorization');
    if (!header) throw new AppError(401, 'missing_authorization', 'The Authorization header is required: "Bearer <API key>"');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new AppError(401, 'invalid_api_key', 'The Authorization header must be "Bearer <API key>"');
    const found = await keys.lookup(hashApiKey(match[1]));
    if (!found) throw new AppError(401, 'invalid_api_key', 'The API key is invalid or revoked');
    const { key, ...counted } = found;
    const sandbox = isSandboxKey(match[1]);
    const scenario = sandboxScenario(ctx.get(SCENARIO_HEADER), sandbox);
    const caller: Caller = {
      accountId: key.account_id, keyId: key.id, keyName: key.name, defaultGrouping: key.default_grouping, availableOnArrival: key.available,
      ...(sandbox ? { sandbox: { scenario } } : {}),
    };
    ctx.state.caller = caller;
    ctx.state.counted = counted;
    await next();
  };
}
