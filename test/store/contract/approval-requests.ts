// Contract: approval requests (the inbox, ADR 033): one pending request per call, newest first,
// gone once decided (exactly one taker, across connections) or expired; receipts signed for
// them wait by fingerprint until they expire.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FP, FP2, tx, type StoreFactory } from './harness.js';
import type { ApprovalRequest } from '../../../src/store/ports.js';

const at = (s: number) => new Date(Date.parse('2026-11-30T08:00:00.000Z') + s * 1000).toISOString();

function request(id: string, fingerprint: string, created: number, over: Partial<ApprovalRequest> = {}): ApprovalRequest {
  return {
    id,
    fingerprint,
    tool: 'send_email',
    call: JSON.stringify({ arguments: { to: 'a\u0000b\\c' }, tool: 'send_email' }),
    task: 'T-\u00001',
    label: 'internal',
    entry: 7,
    gate: null,
    rule: '{"tool":"send_email"}',
    created_at: at(created),
    expires_at: at(created + 60),
    ...over,
  };
}

export function approvalRequestsContract(name: string, open: StoreFactory): void {
  test(`${name} approval requests: recorded exactly, newest first, one per fingerprint, expired ones hidden`, async () => {
    const { store, peer } = await open();
    const a = store.approvalRequests;
    const first = request('req-1', FP, 0);
    await tx(store, () => {
      assert.equal(a.record(first), 'req-1');
      assert.equal(a.record(request('req-2', FP2, 5, { gate: 'gate-a' })), 'req-2');
    });
    await tx(store, () => {
      assert.deepEqual(a.get('req-1'), first, 'values come back exactly (NUL and backslash too)');
      assert.deepEqual(a.pending(at(1), 10).map((r) => r.id), ['req-2', 'req-1']);
      assert.deepEqual(a.pending(at(1), 1).map((r) => r.id), ['req-2']);
      assert.deepEqual(a.pending(at(61), 10).map((r) => r.id), ['req-2'], 'req-1 expired at 60s');
    });
    // The same call refused again, from another connection: the request is refreshed, its id kept.
    const o = await peer();
    await tx(o, () => {
      assert.equal(o.approvalRequests.record(request('req-3', FP, 10, { entry: 9, label: 'confidential' })), 'req-1');
    });
    await tx(store, () => {
      const r = a.get('req-1')!;
      assert.equal(r.entry, 9);
      assert.equal(r.label, 'confidential');
      assert.equal(r.created_at, at(10));
      assert.equal(a.get('req-3'), null);
      assert.deepEqual(a.pending(at(11), 10).map((x) => x.id), ['req-1', 'req-2'], 'the refreshed request is the newest');
    });
  });

  test(`${name} approval requests: taken once (a decision is final), never when expired; prune removes what expired`, async () => {
    const { store, peer } = await open();
    const a = store.approvalRequests;
    await tx(store, () => {
      a.record(request('r-1', FP, 0));
      a.record(request('r-2', FP2, 0, { expires_at: at(10) }));
    });
    const o = await peer();
    // Two deciders at once through two connections: exactly one takes it.
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => tx(i % 2 ? o : store, () => (i % 2 ? o : store).approvalRequests.take('r-1', at(1))?.id ?? null)),
    );
    const taken = results.filter((r) => r.status === 'fulfilled' && r.value === 'r-1');
    assert.equal(taken.length, 1, JSON.stringify(results));
    await tx(store, () => {
      assert.equal(a.get('r-1'), null, 'deleted once decided');
      assert.equal(a.take('r-2', at(10)), null, 'expired: cannot be decided');
      assert.ok(a.get('r-2'), 'still there until pruned');
      a.offer({ receipt_id: 'sha256:' + '1'.repeat(64), fingerprint: FP, receipt: '{"a":1}', expires_at: at(5) });
      a.offer({ receipt_id: 'sha256:' + '2'.repeat(64), fingerprint: FP, receipt: '{"a":2}', expires_at: at(50) });
      a.offer({ receipt_id: 'sha256:' + '3'.repeat(64), fingerprint: FP2, receipt: '{"a":3}', expires_at: at(50) });
      assert.throws(() => a.offer({ receipt_id: 'sha256:' + '3'.repeat(64), fingerprint: FP2, receipt: '{"a":3}', expires_at: at(50) }), 'offered twice');
    });
    await tx(o, () => {
      assert.deepEqual(o.approvalRequests.offered(FP).map((r) => r.receipt), ['{"a":1}', '{"a":2}'], 'another connection sees them');
      assert.equal(o.approvalRequests.prune(at(10)), 2, 'r-2 and the first receipt expired');
    });
    await tx(store, () => {
      assert.equal(a.get('r-2'), null);
      assert.deepEqual(a.offered(FP).map((r) => r.receipt), ['{"a":2}']);
      assert.deepEqual(a.offered(FP2), [{ receipt_id: 'sha256:' + '3'.repeat(64), fingerprint: FP2, receipt: '{"a":3}', expires_at: at(50) }]);
      assert.equal(a.prune(at(10)), 0);
    });
  });

  test(`${name} approval requests: a failed transaction records nothing`, async () => {
    const { store } = await open();
    await assert.rejects(
      tx(store, () => {
        store.approvalRequests.record(request('gone', FP, 0));
        throw new Error('the decision failed');
      }),
    );
    await tx(store, () => assert.equal(store.approvalRequests.get('gone'), null));
  });
}
