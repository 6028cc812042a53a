import assert from 'node:assert/strict';
import type { DataSource } from 'typeorm';
import { openDatabase } from '../../src/db/data-source';
import { readBalance } from '../../src/billing/sparks';
import {
  cancelHelperCall, completeHelperCall, expireHelperReservations, HelperCallUnpaid, paidBlocks, reserveHelperCall,
} from '../../src/helper-usage/usage';
import { testEnvironment } from '../support/environment';
import { assertMoneyConsistent, newAccount } from '../support/fixtures';

describe('helper usage: reserve, complete, cancel (real Postgres)', () => {
  let db: DataSource;
  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false });
  });
  after(() => db.destroy());

  const setUsed = (accountId: number, used: number) => db.query(
    `INSERT INTO helper_usage (account_id, day, used) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2)`, [accountId, used]);
  const counts = async (accountId: number) => (await db.query(
    `SELECT used, pending FROM helper_usage WHERE account_id = $1`, [accountId]))[0];

  it('prices blocks: 100 free, then one per started 20', () => {
    assert.deepEqual([0, 100, 101, 120, 121, 140, 141].map(paidBlocks), [0, 0, 1, 1, 2, 2, 3]);
  });

  it('holds a block while only calls in flight need it, and charges it once one of them succeeds', async () => {
    const { accountId } = await newAccount(db, 1);
    await setUsed(accountId, 100);
    const first = await reserveHelperCall(db, accountId, null); // call 101 opens block 1: held
    const second = await reserveHelperCall(db, accountId, null); // call 102: inside block 1
    assert.deepEqual(await readBalance(db, accountId), { balance: 1, holds: 1, available: 0 });
    assert.equal(await cancelHelperCall(db, first), true); // the second call still needs block 1
    assert.deepEqual(await readBalance(db, accountId), { balance: 1, holds: 1, available: 0 });
    assert.equal(await completeHelperCall(db, second), true); // block 1 charged
    assert.deepEqual(await readBalance(db, accountId), { balance: 0, holds: 0, available: 0 });
    assert.deepEqual(await counts(accountId), { used: 101, pending: 0 });
    assert.equal(await completeHelperCall(db, second), false, 'a call is finished once');
    assert.equal(await cancelHelperCall(db, first), false);
    await assertMoneyConsistent(db, accountId);
  });

  it('releases a block once no call in flight needs it', async () => {
    const { accountId } = await newAccount(db, 1);
    await setUsed(accountId, 120);
    const opening = await reserveHelperCall(db, accountId, null); // call 121 opens block 2
    const inside = await reserveHelperCall(db, accountId, null); // call 122: inside block 2
    assert.equal(await cancelHelperCall(db, inside), true);
    assert.deepEqual(await readBalance(db, accountId), { balance: 1, holds: 1, available: 0 }, 'still needed by call 121');
    assert.equal(await cancelHelperCall(db, opening), true);
    assert.deepEqual(await readBalance(db, accountId), { balance: 1, holds: 0, available: 1 });
    assert.deepEqual(await counts(accountId), { used: 120, pending: 0 });
    await assertMoneyConsistent(db, accountId);
  });

  it('expires reservations left by a dead API process: not counted, their spark released, finished once', async () => {
    const { accountId } = await newAccount(db, 2);
    await setUsed(accountId, 100);
    const stale = await reserveHelperCall(db, accountId, null);
    const fresh = await reserveHelperCall(db, accountId, null);
    await db.query(`UPDATE helper_reservations SET created_at = now() - interval '20 minutes' WHERE id = $1`, [stale.id]);
    assert.equal(await expireHelperReservations(db, 600), 1);
    assert.deepEqual(await readBalance(db, accountId), { balance: 2, holds: 1, available: 1 }, 'the fresh call still needs block 1');
    assert.equal(await completeHelperCall(db, stale), false, 'a late answer is not counted');
    assert.equal(await cancelHelperCall(db, fresh), true);
    assert.deepEqual(await readBalance(db, accountId), { balance: 2, holds: 0, available: 2 });
    assert.deepEqual(await counts(accountId), { used: 100, pending: 0 });
    await assertMoneyConsistent(db, accountId);
  });

  it('refuses with the count of succeeded calls when the next block cannot be held', async () => {
    const { accountId } = await newAccount(db, 0);
    await setUsed(accountId, 100);
    await assert.rejects(reserveHelperCall(db, accountId, null), (err: unknown) => err instanceof HelperCallUnpaid && err.usedToday === 100);
    assert.deepEqual(await counts(accountId), { used: 100, pending: 0 });
    await assertMoneyConsistent(db, accountId);
  });
});
