// Contract: the ledger's rows and the epochs' anchors. Entries are kept byte for byte; a seq is
// taken once (two writers that raced fail whole, never fork the chain); reads come back in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LedgerRow } from '../../../src/store/ports.js';
import { tx, type StoreFactory } from './harness.js';

const row = (seq: number, kind = 'decision', body = `{"seq":${seq},"x":"\\u00e9 é"}`): LedgerRow => ({
  seq,
  ts: `2026-11-30T08:00:0${seq % 10}.000Z`,
  kind,
  hash: 'sha256:' + String(seq % 10).repeat(64),
  body,
});

export function ledgerContract(name: string, open: StoreFactory): void {
  test(`${name} ledger: rows in, rows out, in seq order, byte for byte`, async () => {
    const { store } = await open();
    const l = store.ledger;
    const rows = [row(0, 'startup'), row(1), row(2, 'epoch'), row(3, 'anchor_failure'), row(4)];
    await tx(store, () => {
      assert.equal(l.head(), null);
      assert.equal(l.count(), 0);
      assert.equal(l.lastOfKind('epoch'), null);
      for (const r of rows.slice(0, 2)) l.insert(r);
      assert.deepEqual(l.head(), rows[1], 'a row inserted is read back in the same transaction');
    });
    await tx(store, () => {
      for (const r of rows.slice(2)) l.insert(r);
    });
    await tx(store, () => {
      assert.deepEqual(l.head(), rows[4]);
      assert.equal(l.count(), 5);
      assert.deepEqual([...l.bodies(0, 100)], rows.map((r) => r.body));
      assert.deepEqual([...l.bodies(2, 2)], [rows[2].body, rows[3].body]);
      assert.deepEqual([...l.between(1, 3)], rows.slice(1, 4).map((r) => ({ seq: r.seq, body: r.body })));
      assert.deepEqual(l.lastOfKind('epoch'), rows[2]);
      assert.throws(() => l.insert(row(4)), 'a seq is taken once');
    });
    await assert.rejects(tx(store, () => l.insert(row(3))), 'a seq is taken once, as a transaction of its own too');
  });

  test(`${name} ledger: the jobs of one transaction each find the head the jobs before them left; a failed job's rows are not in it`, async () => {
    const { store, peer } = await open();
    const l = store.ledger;
    const other = await peer();
    const fail = new Error('this job fails after appending');
    // Queued in one turn: one transaction, a savepoint per job.
    const jobs = [
      tx(store, () => {
        assert.equal(l.head(), null);
        l.insert(row(0, 'startup'));
        l.insert(row(1));
      }),
      tx(store, () => {
        l.insert(row(2, 'decision', '{"rolled":"back"}'));
        throw fail;
      }),
      tx(store, () => {
        assert.deepEqual(l.head(), row(1), 'the failed job left nothing');
        l.insert(row(2));
      }),
      tx(store, () => l.head()),
      tx(store, () => 'no ledger read'),
      tx(store, () => {
        assert.deepEqual(l.head(), row(2));
        l.insert(row(3));
      }),
    ];
    const settled = await Promise.allSettled(jobs);
    assert.deepEqual(settled.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    assert.equal((settled[1] as PromiseRejectedResult).reason, fail);
    assert.deepEqual((settled[3] as PromiseFulfilledResult<unknown>).value, row(2), 'a job that only reads the head sees the one before it left');
    // Another connection moves the chain between two transactions: the next one reads it anew.
    await tx(other, () => {
      assert.deepEqual(other.ledger.head(), row(3));
      other.ledger.insert(row(4));
    });
    await Promise.all([
      tx(store, () => {
        assert.deepEqual(l.head(), row(4));
        l.insert(row(5));
      }),
      tx(store, () => assert.deepEqual(l.head(), row(5))),
    ]);
    assert.deepEqual(await tx(store, () => [...l.bodies(0, 10)]), [0, 1, 2, 3, 4, 5].map((i) => row(i).body));
  });

  test(`${name} ledger: a seq taken by another connection cannot be taken again`, async () => {
    const { store, peer } = await open();
    const other = await peer();
    await tx(store, () => store.ledger.insert(row(0)));
    await tx(other, () => {
      assert.deepEqual(other.ledger.head(), row(0));
      assert.throws(() => other.ledger.insert(row(0, 'decision', '{"forked":true}')));
    });
    assert.deepEqual(await tx(store, () => [...store.ledger.bodies(0, 10)]), [row(0).body]);
  });

  test(`${name} anchors: one per epoch and kind, replaced by a newer one, listed by epoch then kind`, async () => {
    const { store } = await open();
    const a = store.anchors;
    await tx(store, () => {
      assert.deepEqual([...a.all()], []);
      assert.deepEqual(a.kinds(5), new Set());
      a.put({ epoch: 9, kind: 'rfc3161', data: '{"t":1}' });
      a.put({ epoch: 5, kind: 'rfc3161', data: '{"t":2}' });
      a.put({ epoch: 5, kind: 'rekor', data: '{"r":1}' });
    });
    await tx(store, () => a.put({ epoch: 5, kind: 'rekor', data: '{"r":2}' }));
    await tx(store, () => {
      assert.deepEqual(a.kinds(5), new Set(['rfc3161', 'rekor']));
      assert.deepEqual([...a.all()], [
        { epoch: 5, kind: 'rekor', data: '{"r":2}' },
        { epoch: 5, kind: 'rfc3161', data: '{"t":2}' },
        { epoch: 9, kind: 'rfc3161', data: '{"t":1}' },
      ]);
    });
  });
}
