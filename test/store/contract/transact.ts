// Contract: one `transact` makes a decision's writes durable together or not at all; a job that
// throws rolls back alone; what resolved is visible to every other connection; two gates
// appending at once still make one contiguous, signed chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../../src/ledger/ledger.js';
import { entryHash, verifyEntrySignature } from '../../../src/ledger/entry.js';
import { FileSigner } from '../../../src/keys/file.js';
import type { GateKey } from '../../../src/ledger/keys.js';
import { Operations } from '../../../src/operations/operations.js';
import { FP, T, tx, type StoreFactory } from './harness.js';

function key(): GateKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return new FileSigner(privateKey);
}

export function transactContract(name: string, open: StoreFactory): void {
  test(`${name} transact: a throwing job leaves nothing behind and rejects alone`, async () => {
    const { store, peer } = await open();
    const ledger = new Ledger(store.ledger, key());
    const ops = new Operations(store.operations);
    const results = await Promise.allSettled([
      store.transact(() => {
        ops.begin('a', FP, 't', T);
        return ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 1 }).seq;
      }),
      store.transact(() => {
        ops.begin('b', FP, 't', T);
        ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 2 });
        throw new Error('a check failed after writing');
      }),
      store.transact(() => ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 3 }).seq),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((results[1] as PromiseRejectedResult).reason), /a check failed/);
    const other = await peer();
    await tx(other, () => {
      assert.deepEqual([...readEntries(other.ledger)].map((e) => [e.seq, e.n]), [[0, 1], [1, 3]], 'no gap where the failed job wrote');
      assert.equal(other.operations.get('a')!.state, 'pending');
      assert.equal(other.operations.get('b'), null);
    });
  });

  test(`${name} transact: two connections appending at once make one contiguous chain`, async () => {
    const { store, peer } = await open();
    const k = key();
    const stores = [store, await peer()];
    const ledgers = stores.map((s) => new Ledger(s.ledger, k));
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => stores[i % 2].transact(() => ledgers[i % 2].appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', i }))),
    );
    const entries = await tx(store, () => [...readEntries(store.ledger)]);
    assert.deepEqual(entries.map((e) => e.seq), [...Array(40).keys()]);
    for (let i = 1; i < entries.length; i++) assert.equal(entries[i].prev, entryHash(entries[i - 1]));
    for (const e of entries) assert.ok(verifyEntrySignature(e, k.publicKey));
  });

  test(`${name} transact: the value of the job is what resolves; a fresh store is intact`, async () => {
    const { store } = await open();
    assert.deepEqual(await store.transact(() => ({ n: 42 })), { n: 42 });
    store.assertIntact();
  });

  test(`${name} transact: a job that caught a store error is not committed half-done`, async () => {
    const { store } = await open();
    const ops = new Operations(store.operations);
    await tx(store, () => ops.begin('x', FP, 't', T));
    // The job swallows whatever the store throws and goes on writing: what it commits must be
    // what it would commit on a store that answers at once (here: 'y' begun, 'x' untouched).
    const seen = await tx(store, () => {
      let existed = false;
      try {
        ops.begin('x', FP, 't', T);
      } catch {
        existed = true;
      }
      ops.begin('y', FP, 't', T);
      return existed;
    });
    assert.equal(seen, true);
    await tx(store, () => {
      assert.equal(ops.get('y')!.state, 'pending');
      assert.equal(ops.get('x')!.attempts, 1);
    });
  });

  test(`${name} transact: ports used outside a transaction are refused or answered, never half-written`, async () => {
    const { store } = await open();
    try {
      store.operations.get('z'); // SQLite answers at once; PostgreSQL refuses (StoreError)
    } catch (e) {
      assert.match(String(e), /inside transact/);
    }
  });

  test(`${name} transactLater: deferred work runs first in the next transaction, and commits alone when none follows`, async () => {
    const { store, peer } = await open();
    assert.ok(store.transactLater, 'the store offers transactLater (ADR 017)');
    const later = store.transactLater!;
    const ops = new Operations(store.operations);
    await tx(store, () => ops.begin('l1', FP, 't', T));
    // Queued for later, then a decision in the same turn: the decision sees the settlement.
    const settled = later(() => store.operations.settle('l1', 1, { state: 'succeeded', result: { ok: 1 }, error: null }, new Date(T).toISOString()));
    const seen = store.transact(() => store.operations.get('l1')!.state);
    assert.deepEqual(await Promise.all([settled, seen]), [true, 'succeeded']);
    // Alone: it still commits (on its own, shortly), visible to another connection once resolved.
    await tx(store, () => ops.begin('l2', FP, 't', T));
    assert.equal(await later(() => store.operations.markUnknown('l2', 1, 'test', new Date(T).toISOString())), true);
    const other = await peer();
    assert.equal(await tx(other, () => other.operations.get('l2')!.state), 'unknown');
    // A deferred job that throws rejects alone; the job after it commits.
    const bad = later(() => {
      ops.begin('l3', FP, 't', T);
      throw new Error('deferred job failed');
    });
    const good = store.transact(() => ops.begin('l4', FP, 't', T));
    const r = await Promise.allSettled([bad, good]);
    assert.deepEqual(r.map((x) => x.status), ['rejected', 'fulfilled']);
    await tx(other, () => {
      assert.equal(other.operations.get('l3'), null);
      assert.equal(other.operations.get('l4')!.state, 'pending');
    });
  });
}
