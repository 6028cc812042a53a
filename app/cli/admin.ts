/**
 * The operator CLI (there is no key-management endpoint):
 *   account:create --name NAME --sparks N [--json]
 *   key:create --account ID [--name NAME] [--grouping api_key_inbox|legacy_per_request] [--sandbox] [--json]
 *   key:revoke --key-id ID
 *   key:set --key-id ID --monthly-spend-limit N|none
 *   key:list --account ID [--json]
 *   sparks:grant --account ID --amount N [--json]
 *   pricing:set [--generation N] [--improvement N] [--video-5sec N] [--video-10sec N] [--json]
 *   pricing:show [--json]
 *   user:invite --account ID --email EMAIL [--role owner|member] [--json]
 */
import { parseArgs } from 'node:util';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/data-source';
import { Pricing } from '../../src/db/entities';
import { createAccount, createKey, grantToAccount, listKeys, OperatorError, revokeKey, setKeySpendLimit } from '../../src/accounts/accounts';
import { readBalance } from '../../src/billing/sparks';
import { readPriceList } from '../../src/billing/pricing';
import { linkUrl } from '../../src/users/links';
import { inviteUser, isEmail, ROLES, type Role, UnknownAccount } from '../../src/users/users';

const USAGE = `usage: npm run --silent admin -- <command> [options]
  account:create --name NAME --sparks N [--json]
  key:create --account ID [--name NAME] [--grouping api_key_inbox|legacy_per_request] [--sandbox] [--json]
  key:revoke --key-id ID
  key:set --key-id ID --monthly-spend-limit N|none
  key:list --account ID [--json]
  sparks:grant --account ID --amount N [--json]
  pricing:set [--generation N] [--improvement N] [--video-5sec N] [--video-10sec N] [--json]
  pricing:show [--json]
  user:invite --account ID --email EMAIL [--role owner|member] [--json]`;

class UsageError extends Error {}

function count(value: string | undefined, flag: string, required = true): number | undefined {
  if (value === undefined) {
    if (required) throw new UsageError(`${flag} is required`);
    return undefined;
  }
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) > 2_147_483_647) {
    throw new UsageError(`${flag} must be a non-negative integer`);
  }
  return Number(value);
}

type Output = { json: unknown; text: string };

async function run(db: DataSource, command: string, o: Record<string, string | boolean | undefined>): Promise<Output> {
  const str = (name: string) => o[name] as string | undefined;
  switch (command) {
    case 'account:create': {
      const name = str('name');
      if (!name) throw new UsageError('--name is required');
      const created = await createAccount(db, name, count(str('sparks'), '--sparks')!);
      return {
        json: { account_id: created.accountId, api_key: created.apiKey, key_id: created.keyId },
        text: `account ${created.accountId} created\nAPI key (shown once): ${created.apiKey}`,
      };
    }
    case 'key:create': {
      const grouping = str('grouping') ?? 'api_key_inbox';
      if (grouping !== 'api_key_inbox' && grouping !== 'legacy_per_request') {
        throw new UsageError('--grouping must be api_key_inbox or legacy_per_request');
      }
      const sandbox = o.sandbox ? { sparks: loadConfig().sandboxSparks } : undefined;
      const key = await createKey(db, count(str('account'), '--account')!, str('name'), grouping, { sandbox });
      const kind = sandbox ? 'sandbox key' : 'key';
      return { json: { api_key: key.apiKey, key_id: key.keyId }, text: `${kind} ${key.keyId} created\nAPI key (shown once): ${key.apiKey}` };
    }
    case 'key:revoke': {
      const keyId = count(str('key-id'), '--key-id')!;
      await revokeKey(db, keyId);
      return { json: { key_id: keyId, revoked: true }, text: `key ${keyId} revoked` };
    }
    case 'key:set': {
      const keyId = count(str('key-id'), '--key-id')!;
      const given = str('monthly-spend-limit');
      if (given === undefined) throw new UsageError('--monthly-spend-limit N|none is required');
      const limit = given === 'none' ? null : count(given, '--monthly-spend-limit')!;
      if (!(await setKeySpendLimit(db, keyId, limit))) throw new OperatorError(`key ${keyId} not found`);
      return { json: { key_id: keyId, monthly_spend_limit: limit }, text: `key ${keyId}: monthly spend limit ${limit ?? 'none'}` };
    }
    case 'key:list': {
      const keys = await listKeys(db, count(str('account'), '--account')!);
      const text = keys.map((k) => `${k.key_id}\t${k.prefix}…\t${k.name}\t${k.default_grouping}\t${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}`).join('\n');
      return { json: { keys }, text: text || 'no keys' };
    }
    case 'sparks:grant': {
      const accountId = count(str('account'), '--account')!;
      const amount = count(str('amount'), '--amount')!;
      if (amount === 0) throw new UsageError('--amount must be positive');
      await grantToAccount(db, accountId, amount);
      const balance = await readBalance(db, accountId);
      return { json: { account_id: accountId, granted: amount, ...balance }, text: `granted ${amount}; balance ${balance.balance}, available ${balance.available}` };
    }
    case 'pricing:set': {
      const changes = {
        generation: count(str('generation'), '--generation', false),
        improvement: count(str('improvement'), '--improvement', false),
        video5sec: count(str('video-5sec'), '--video-5sec', false),
        video10sec: count(str('video-10sec'), '--video-10sec', false),
      };
      const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
      if (Object.keys(set).length === 0) throw new UsageError('give at least one of --generation, --improvement, --video-5sec, --video-10sec');
      await db.getRepository(Pricing).update({ id: 1 }, set);
      const prices = await readPriceList(db);
      return { json: prices, text: JSON.stringify(prices) };
    }
    case 'pricing:show': {
      const prices = await readPriceList(db);
      return { json: prices, text: JSON.stringify(prices) };
    }
    case 'user:invite': {
      const accountId = count(str('account'), '--account')!;
      const email = str('email');
      if (!email || !isEmail(email)) throw new UsageError('--email must be an email address');
      const role = (str('role') ?? 'owner') as Role;
      if (!ROLES.includes(role)) throw new UsageError('--role must be owner or member');
      const invited = await inviteUser(db, { accountId, email, role }).catch((err) => {
        throw err instanceof UnknownAccount ? new OperatorError(err.message) : err;
      });
      if (invited === 'taken') throw new OperatorError(`${email} already has a user who can sign in (here or in another account)`);
      const link = linkUrl(loadConfig().publicBaseUrl, invited.token);
      return { json: { user_id: invited.userId, link }, text: `user ${invited.userId} invited as ${role}\none-time sign-in link (valid 7 days): ${link}` };
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'a command is required');
  }
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        name: { type: 'string' }, sparks: { type: 'string' }, account: { type: 'string' }, grouping: { type: 'string' },
        'key-id': { type: 'string' }, amount: { type: 'string' }, generation: { type: 'string' }, improvement: { type: 'string' },
        'video-5sec': { type: 'string' }, 'video-10sec': { type: 'string' }, json: { type: 'boolean' }, sandbox: { type: 'boolean' },
        email: { type: 'string' }, role: { type: 'string' }, 'monthly-spend-limit': { type: 'string' },
      },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const db = await openDatabase(loadConfig().databaseUrl, { migrate: true, poolSize: 2 });
  try {
    const out = await run(db, command, values);
    process.stdout.write(`${values.json ? JSON.stringify(out.json) : out.text}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof OperatorError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await db.destroy();
  }
}

main().then((code) => process.exit(code), (err) => {
  process.stderr.write(`error: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
