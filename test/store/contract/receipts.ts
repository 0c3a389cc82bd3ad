// Contract: approval receipts are single use, across connections (gates) too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FP, FP2, tx, type StoreFactory } from './harness.js';

export function receiptsContract(name: string, open: StoreFactory): void {
  test(`${name} receipts: recorded once; a second use fails, also through another connection`, async () => {
    const { store, peer } = await open();
    const u = { receipt_id: 'sha256:' + 'c'.repeat(64), nonce: 'n'.repeat(22), approver: FP, fingerprint: FP2, receipt: '{}' };
    await tx(store, () => {
      assert.equal(store.receipts.used(u.receipt_id), null);
      store.receipts.consume(u, '2026-11-30T08:00:00.000Z');
    });
    await tx(store, () => {
      assert.deepEqual(store.receipts.used(u.receipt_id), { ...u, used_at: '2026-11-30T08:00:00.000Z' });
      assert.throws(() => store.receipts.consume(u, '2026-11-30T08:00:01.000Z'));
    });
    const other = await peer();
    await tx(other, () => {
      assert.ok(other.receipts.used(u.receipt_id));
      assert.throws(() => other.receipts.consume(u, '2026-11-30T08:00:02.000Z'));
    });
  });

  test(`${name} receipts: consumed at once through two connections, one wins and the other fails whole`, async () => {
    const { store, peer } = await open();
    const other = await peer();
    const u = { receipt_id: 'sha256:' + 'd'.repeat(64), nonce: 'n'.repeat(22), approver: FP, fingerprint: FP2, receipt: '{}' };
    // Each job reads the receipt as unused and then consumes it; the loser must not commit.
    const job = (s: typeof store, n: number) =>
      tx(s, () => {
        if (s.receipts.used(u.receipt_id) !== null) throw new Error('already used');
        s.receipts.consume({ ...u, nonce: String(n).repeat(22) }, '2026-11-30T08:00:00.000Z');
        return n;
      });
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => job(i % 2 ? other : store, i)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'exactly one use');
    const used = await tx(store, () => store.receipts.used(u.receipt_id));
    const winner = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<number>).value;
    assert.equal(used!.nonce, String(winner).repeat(22), 'the stored use is the winner’s');
  });
}
