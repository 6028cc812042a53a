import assert from 'node:assert/strict';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { CONNECTION_SETTINGS, openDatabase } from '../../src/db/data-source';
import { newAccount } from '../support/fixtures';
import { testEnvironment } from '../support/environment';

describe('database connections under a misbehaving peer', () => {
  let db: DataSource;
  before(async () => {
    db = await openDatabase(testEnvironment().databaseUrl, { migrate: false, poolSize: 2 });
  });
  after(() => db.destroy());

  it('every pooled connection has a server-side limit on idling inside a transaction', async () => {
    const [{ idle }] = await db.query(`SELECT current_setting('idle_in_transaction_session_timeout') AS idle`);
    assert.equal(idle, '1min');
  });

  it('a client lost inside a transaction gives its row locks back at the server\'s limit: charges on that account go on', async () => {
    const { accountId } = await newAccount(db, 10);
    // The same settings with a limit short enough for a test: a client that took the account's row and went silent.
    const lost = new Client({ connectionString: testEnvironment().databaseUrl, ...CONNECTION_SETTINGS, idle_in_transaction_session_timeout: 500 });
    lost.on('error', () => undefined); // the server ends the session: expected
    await lost.connect();
    await lost.query('BEGIN');
    await lost.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
    try {
      // A charge's statement on the same row waits for the lock, then goes through once the server ends the idle session.
      await db.query('UPDATE accounts SET updated_at = now() WHERE id = $1', [accountId]);
      await assert.rejects(lost.query('SELECT 1'), 'the lost session was ended by the server');
    } finally {
      await lost.end().catch(() => undefined);
    }
  });
});
