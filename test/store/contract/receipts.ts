// Contract: approval receipts are single use, across connections (gates) too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FP, FP2, type StoreFactory } from './harness.js';

export function receiptsContract(name: string, open: StoreFactory): void {
  test(`${name} receipts: recorded once; a second use fails, also through another connection`, async () => {
    const { store, peer } = await open();
    const u = { receipt_id: 'sha256:' + 'c'.repeat(64), nonce: 'n'.repeat(22), approver: FP, fingerprint: FP2, receipt: '{}' };
    assert.equal(store.receipts.used(u.receipt_id), null);
    store.receipts.consume(u, '2026-11-30T08:00:00.000Z');
    assert.deepEqual(store.receipts.used(u.receipt_id), { ...u, used_at: '2026-11-30T08:00:00.000Z' });
    assert.throws(() => store.receipts.consume(u, '2026-11-30T08:00:01.000Z'));
    const other = await peer();
    assert.ok(other.receipts.used(u.receipt_id));
    assert.throws(() => other.receipts.consume(u, '2026-11-30T08:00:02.000Z'));
  });
}
