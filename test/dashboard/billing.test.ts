/**
 * The dashboard's billing ledger: a generation's hold and charge and the account's grant, newest first, each with
 * its action; a released hold; pages by cursor that neither skip nor repeat entries of one instant across the
 * three sources; the CSV export equal to the pages; a cursor not of this list refused; nothing of another account.
 */
import assert from 'node:assert/strict';
import { grantSparks, holdSparksUnder, settleHoldUnder } from '../../src/billing/sparks';
import { actionWorkflowId } from '../../src/temporal/contract';
import { signedInUser } from '../support/dashboard-client';
import { apiClient, jpegBase64, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('dashboard billing', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());

  it('lists a generation\'s hold and charge after the account\'s grant, newest first, with its action', async () => {
    const { browser, apiKey } = await signedInUser(stack.baseUrl, stack.db);
    const accepted = await apiClient(stack.baseUrl, apiKey!)('POST', `${V1}/generate/photo`, {
      images: [{ data: await jpegBase64() }], product_name: 'Cup', category_id: 'home', resolution: '1K',
    });
    await stack.temporal.workflow.getHandle(actionWorkflowId(accepted.body.action_id)).result();
    const { price } = (await apiClient(stack.baseUrl, apiKey!)('GET', `${V1}/status/${accepted.body.action_id}`)).body;
    const { body } = await browser.call('GET', '/ledger');
    assert.deepEqual(body.entries.map((e: { kind: string; amount: number; action_id: number | null }) => [e.kind, e.amount, e.action_id]), [
      ['charge', -price, accepted.body.action_id], ['hold', -price, accepted.body.action_id], ['grant', 100, null],
    ]);
    assert.equal(body.next_cursor, null);
  });

  it('pages by cursor through entries of one instant in every source without skipping or repeating, and exports the same as CSV', async () => {
    const { browser, accountId } = await signedInUser(stack.baseUrl, stack.db);
    // One transaction, one now(): three grants, two holds and a release share an instant (the first hold released later).
    await stack.db.transaction(async (m) => {
      for (let i = 1; i <= 3; i++) await grantSparks(m, accountId, i, `test:same-instant:${accountId}:${i}`);
      await holdSparksUnder(m, accountId, null, `test:hold:${accountId}:a`, 4);
      await holdSparksUnder(m, accountId, null, `test:hold:${accountId}:b`, 5);
    });
    await stack.db.transaction((m) => settleHoldUnder(m, `test:hold:${accountId}:a`, 'released'));
    const all = (await browser.call('GET', '/ledger?limit=200')).body.entries;
    assert.deepEqual(all.map((e: { kind: string; amount: number }) => `${e.kind} ${e.amount}`),
      ['release 4', 'grant 3', 'grant 2', 'grant 1', 'hold -5', 'hold -4', 'grant 100']);
    for (const limit of [1, 2, 3]) {
      const walked = [];
      let cursor: string | null = null;
      do {
        const page: any = await browser.call('GET', `/ledger?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200);
        walked.push(...page.body.entries);
        cursor = page.body.next_cursor;
      } while (cursor);
      assert.deepEqual(walked, all, `pages of ${limit}`);
    }

    const csv = await browser.call('GET', '/ledger.csv');
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type')!, /^text\/csv/);
    assert.match(csv.headers.get('content-disposition')!, new RegExp(`attachment; filename="ledger-account-${accountId}.csv"`));
    const lines = (csv.body as string).trim().split('\n');
    assert.equal(lines[0], 'at,kind,amount,action_id,reference');
    assert.deepEqual(lines.slice(1).map((l) => l.split(',').slice(0, 3).join(',')), all.map((e: { at: string; kind: string; amount: number }) => `${e.at},${e.kind},${e.amount}`));
  });

  it('refuses a cursor that is not one of its own, and shows nothing of another account', async () => {
    const a = await signedInUser(stack.baseUrl, stack.db);
    const b = await signedInUser(stack.baseUrl, stack.db);
    await stack.db.transaction((m) => grantSparks(m, b.accountId, 7, `test:b-only:${b.accountId}`));
    const forged = (position: unknown[]) => Buffer.from(JSON.stringify(position)).toString('base64url');
    for (const cursor of ['nonsense', forged(['x', 'l', 1]), forged(['foo 1', 'l', 1]), forged(['2026-01-01 00:00:00.000000+00', 'z', 1]),
      forged(['2026-01-01 00:00:00.000000+00', 'l', 3_000_000_000]), forged(['2026-13-45 99:00:00.000000+00', 'l', 1]), forged(['2026-02-30 10:00:00.000000+00', 'l', 1])]) {
      const refused = await a.browser.call('GET', `/ledger?cursor=${cursor}`);
      assert.deepEqual([refused.status, refused.body.detail[0].loc], [422, ['query', 'cursor']], cursor);
    }
    assert.deepEqual((await a.browser.call('GET', '/ledger')).body.entries.map((e: { amount: number }) => e.amount), [100]);
  });
});
