import assert from 'node:assert/strict';
import type { DataSource } from 'typeorm';
import { openDatabase } from '../../src/db/data-source';
import { grantSparks, holdSparks, InsufficientSparks, readBalance, settleHold, transactionWithHolds } from '../../src/billing/sparks';
import { testEnvironment } from '../support/environment';
import { assertMoneyConsistent, newAccount, placeAction } from '../support/fixtures';

describe('billing (real Postgres)', () => {
  let db: DataSource;
  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false });
  });
  after(() => db.destroy());

  it('holds what is available and refuses more, changing nothing', async () => {
    const { accountId } = await newAccount(db, 8);
    const first = await placeAction(db, accountId);
    await transactionWithHolds(db, accountId, 5, (m) => holdSparks(m, accountId, null, first, 5));
    const second = await placeAction(db, accountId);
    await assert.rejects(
      transactionWithHolds(db, accountId, 5, async (m) => {
        await holdSparks(m, accountId, null, second, 5);
        await m.query(`UPDATE actions SET status = 'processing' WHERE id = $1`, [second]); // not kept either
      }),
      (err: unknown) => err instanceof InsufficientSparks && err.available === 3 && err.required === 5,
    );
    assert.deepEqual(await readBalance(db, accountId), { balance: 8, holds: 5, available: 3 });
    assert.deepEqual(await db.query('SELECT status FROM actions WHERE id = $1', [second]), [{ status: 'pending' }]);
    assert.deepEqual(await db.query('SELECT count(*)::int AS n FROM spark_holds WHERE action_id = $1', [second]), [{ n: 0 }]);
    await assertMoneyConsistent(db, accountId);
  });

  it('charges a hold once, however often and however concurrently it is settled', async () => {
    const { accountId } = await newAccount(db, 20);
    const actionId = await placeAction(db, accountId);
    await db.transaction((m) => holdSparks(m, accountId, null, actionId, 5));
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => db.transaction((m) => settleHold(m, actionId, 'charged'))));
    assert.deepEqual(new Set(outcomes), new Set(['charged']));
    assert.deepEqual(await readBalance(db, accountId), { balance: 15, holds: 0, available: 15 });
    const ledger = await db.query(`SELECT amount FROM spark_ledger WHERE action_id = $1`, [actionId]);
    assert.deepEqual(ledger, [{ amount: -5 }]);
    await assertMoneyConsistent(db, accountId);
  });

  it('a release after a charge reports the charge and moves nothing (and the other way round)', async () => {
    const { accountId } = await newAccount(db, 20);
    const charged = await placeAction(db, accountId);
    const released = await placeAction(db, accountId);
    await db.transaction(async (m) => {
      await holdSparks(m, accountId, null, charged, 5);
      await holdSparks(m, accountId, null, released, 4);
    });
    assert.equal(await db.transaction((m) => settleHold(m, charged, 'charged')), 'charged');
    assert.equal(await db.transaction((m) => settleHold(m, charged, 'released')), 'charged');
    assert.equal(await db.transaction((m) => settleHold(m, released, 'released')), 'released');
    assert.equal(await db.transaction((m) => settleHold(m, released, 'charged')), 'released');
    assert.deepEqual(await readBalance(db, accountId), { balance: 15, holds: 0, available: 15 });
    await assertMoneyConsistent(db, accountId);
  });

  it('a hold written the previous release\'s way (held raised by the writer) is counted once, beside new holds', async () => {
    // During a rolling upgrade an old API process raises `held` itself and writes the hold without reserve_at_commit.
    const { accountId } = await newAccount(db, 20);
    const old = await placeAction(db, accountId);
    const current = await placeAction(db, accountId);
    await db.transaction(async (m) => {
      await m.query('UPDATE accounts SET held = held + 5 WHERE id = $1 AND balance - held >= 5', [accountId]);
      await m.query(`INSERT INTO spark_holds (account_id, action_id, amount, status) VALUES ($1, $2, 5, 'held')`, [accountId, old]);
    });
    await transactionWithHolds(db, accountId, 4, (m) => holdSparks(m, accountId, null, current, 4));
    assert.deepEqual(await readBalance(db, accountId), { balance: 20, holds: 9, available: 11 });
    await assertMoneyConsistent(db, accountId);
    assert.equal(await db.transaction((m) => settleHold(m, old, 'charged')), 'charged');
    assert.equal(await db.transaction((m) => settleHold(m, current, 'released')), 'released');
    assert.deepEqual(await readBalance(db, accountId), { balance: 15, holds: 0, available: 15 });
    await assertMoneyConsistent(db, accountId);
  });

  it('books a grant once per reference', async () => {
    const { accountId } = await newAccount(db, 0);
    assert.equal(await db.transaction((m) => grantSparks(m, accountId, 7, `grant:test:${accountId}`)), true);
    assert.equal(await db.transaction((m) => grantSparks(m, accountId, 7, `grant:test:${accountId}`)), false);
    assert.equal((await readBalance(db, accountId)).balance, 7);
    await assertMoneyConsistent(db, accountId);
  });
});
