// Contract: approval requests (the inbox, ADR 033): one pending request per call, newest first,
// gone once decided (exactly one taker, across connections) or expired; receipts signed for
// them wait by fingerprint until they expire. The gate's trim (ADR 058): the expired go and the
// newest `keep` stay, the one just recorded among them, a step at a time, across connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FP, FP2, tx, type StoreFactory } from './harness.js';
import { PRUNE_STEP, type ApprovalRequest } from '../../../src/store/ports.js';

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

const fp = (i: number) => 'sha256:' + i.toString(16).padStart(64, '0');

export function approvalRequestsContract(name: string, open: StoreFactory): void {
  test(`${name} approval requests: trim deletes the expired and all but the newest \`keep\`, never the one just recorded`, async () => {
    const { store, peer } = await open();
    const a = store.approvalRequests;
    await tx(store, () => {
      a.record(request('gone-expired', fp(1), 0, { expires_at: at(5) }));
      a.record(request('t-a', fp(2), 1));
      a.record(request('t-b', fp(3), 2));
      a.record(request('t-c', fp(4), 3));
      a.record(request('t-d', fp(5), 4));
    });
    const o = await peer();
    // Another connection (a second gate): keep 3 with t-b, its own, though two are newer.
    await tx(o, () => o.approvalRequests.trim(at(10), 3, 't-b'));
    await tx(store, () => {
      assert.equal(a.get('gone-expired'), null, 'expired: deleted');
      assert.equal(a.get('t-a'), null, 'the oldest past the bound: deleted');
      assert.deepEqual(a.pending(at(10), 10).map((r) => r.id), ['t-d', 't-c', 't-b']);
    });
    await tx(store, () => a.trim(at(10), 3, 't-d'));
    await tx(store, () => assert.deepEqual(a.pending(at(10), 10).map((r) => r.id), ['t-d', 't-c', 't-b'], 'within the bound: nothing goes'));
    await tx(store, () => a.trim(at(10), 1, 't-c'));
    await tx(store, () => assert.deepEqual(a.pending(at(10), 10).map((r) => r.id), ['t-c'], 'keep 1: the one just recorded'));
    // A failed transaction trims nothing.
    await tx(store, () => a.record(request('t-e', fp(6), 5)));
    await assert.rejects(
      tx(store, () => {
        a.trim(at(100), 1, 't-e');
        throw new Error('the decision failed');
      }),
    );
    await tx(store, () => assert.deepEqual(a.pending(at(10), 10).map((r) => r.id), ['t-e', 't-c']));
  });

  test(`${name} approval requests: trim goes a step at a time through a backlog`, async () => {
    const { store } = await open();
    const a = store.approvalRequests;
    const n = PRUNE_STEP + 3;
    await tx(store, () => {
      for (let i = 0; i < n; i++) a.record(request(`old-${i}`, fp(100 + i), 0, { expires_at: at(1) }));
      a.record(request('fresh', fp(99), 50));
    });
    const left = (): Promise<number> => tx(store, () => Array.from({ length: n }, (_, i) => a.get(`old-${i}`)).filter(Boolean).length);
    await tx(store, () => a.trim(at(60), 10, 'fresh'));
    assert.equal(await left(), 3, `one step: ${PRUNE_STEP} rows`);
    await tx(store, () => a.trim(at(60), 10, 'fresh'));
    assert.equal(await left(), 0);
    await tx(store, () => assert.ok(a.get('fresh')));
  });

  test(`${name} approval requests: two connections recording and trimming at once keep the bound`, async () => {
    const { store, peer } = await open();
    const o = await peer();
    const keep = 3;
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => {
        const s = i % 2 ? o : store;
        return tx(s, () => s.approvalRequests.trim(at(10 + i), keep, s.approvalRequests.record(request(`c-${i}`, fp(200 + i), 10 + i))));
      }),
    );
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected'),
      [],
      'none fails: trims skip rows another transaction holds',
    );
    const ids = await tx(store, () => store.approvalRequests.pending(at(30), 100).map((r) => r.id));
    // Each connection's transaction keeps `keep` of what it sees (the other's new rows are not in
    // its view; a batch may hold all of one connection's records): never fewer, at most keep each.
    assert.ok(ids.length >= keep && ids.length <= 2 * keep, JSON.stringify(ids));
    assert.equal(ids[0], 'c-11', 'the newest stays');
    // The next trim, seeing everything committed, restores the bound exactly.
    await tx(store, () => store.approvalRequests.trim(at(31), keep, store.approvalRequests.record(request('c-12', fp(300), 31))));
    const after = await tx(store, () => store.approvalRequests.pending(at(32), 100).map((r) => r.id));
    assert.deepEqual(after, ['c-12', 'c-11', 'c-10']);
  });

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

  test(`${name} approval requests: listed with each call only up to the bytes asked for, its length always, the rest as pending has it`, async () => {
    const { store } = await open();
    const a = store.approvalRequests;
    const small = request('l-small', FP, 0);
    // Multi-byte characters: the bound is in UTF-8 bytes, not characters.
    const large = request('l-large', FP2, 1, { call: JSON.stringify({ arguments: { body: 'é'.repeat(40_000) }, tool: 'send_email' }) });
    await tx(store, () => {
      a.record(small);
      a.record(large);
      // Recorded in this very transaction: listed as the stored ones are.
      const mine = a.listed(at(2), 10, 1000);
      assert.deepEqual(mine.map((r) => [r.id, r.call_bytes, r.call === null]), [['l-large', Buffer.byteLength(large.call), true], ['l-small', Buffer.byteLength(small.call), false]]);
    });
    await tx(store, () => {
      const bytes = Buffer.byteLength(large.call);
      assert.ok(bytes > 80_000 && large.call.length < 41_000);
      const [l, s] = a.listed(at(2), 10, bytes - 1);
      assert.equal(l.call, null, 'a call one byte over the bound is not read');
      assert.equal(l.call_bytes, bytes);
      assert.deepEqual({ ...s, call_bytes: undefined }, { ...small, call_bytes: undefined }, 'a call within the bound comes back exactly (NUL and backslash too)');
      const { call: _c, call_bytes: _b, ...rest } = l;
      const { call: _d, ...stored } = large;
      assert.deepEqual(rest, stored);
      assert.equal(a.listed(at(2), 10, bytes)[0].call, large.call, 'exactly at the bound: read');
      assert.deepEqual(a.listed(at(2), 10, 0).map((r) => [r.id, r.call]), [['l-large', null], ['l-small', null]]);
      assert.deepEqual(a.listed(at(2), 1, 0).map((r) => r.id), ['l-large'], 'newest first, at most the limit');
      assert.deepEqual(a.listed(at(60), 10, 0).map((r) => r.id), ['l-large'], 'l-small expired at 60s');
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
