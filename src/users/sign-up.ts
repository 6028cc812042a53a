/**
 * Open sign-up (`DASHBOARD_SIGN_UP=on`; off by default): an email makes a new account of its own, with
 * `DASHBOARD_SIGN_UP_SPARKS` granted, whose owner it becomes through the same one-time link as an invitation, so
 * the address is proven before anyone can sign in. An email that already has a user (or an invitation elsewhere)
 * makes nothing; the caller answers the same either way.
 */
import type { DataSource } from 'typeorm';
import { insertAccount } from '../accounts/accounts';
import { inviteUserIn } from './users';

class EmailTaken extends Error {}

/** The new owner and their link's token, or 'taken' (nothing made: the account is rolled back with the rest). */
export async function signUp(
  db: DataSource, input: { email: string; accountName: string; sparks: number },
): Promise<{ accountId: number; userId: number; token: string } | 'taken'> {
  try {
    return await db.transaction(async (m) => {
      const accountId = await insertAccount(m, input.accountName, input.sparks);
      const invited = await inviteUserIn(m, { accountId, email: input.email, role: 'owner' });
      if (invited === 'taken') throw new EmailTaken();
      return { accountId, ...invited };
    });
  } catch (err) {
    if (err instanceof EmailTaken) return 'taken';
    throw err;
  }
}
