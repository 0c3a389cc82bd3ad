// Contract: tool-definition pins (product.md section 9): one pin per (release, tool) for every
// connection; an observed change waits for review; promoting it makes it the pin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FP, FP2, T, tx, type StoreFactory } from './harness.js';

export function pinsContract(name: string, open: StoreFactory): void {
  test(`${name} pins: pin, observe a change, promote it; one pin per release and tool`, async () => {
    const { store, peer } = await open();
    const p = store.pins;
    await tx(store, () => {
      assert.equal(p.get('r@1', 'send'), null);
      p.insert('r@1', 'send', FP, T);
    });
    await tx(store, () => {
      assert.deepEqual(p.get('r@1', 'send'), { release: 'r@1', tool: 'send', digest: FP, observed: null, pinned_at: T });
      assert.throws(() => p.insert('r@1', 'send', FP2, T), 'a second pin of the same tool');
      p.insert('r@2', 'send', FP2, T);
      p.insert('r@1', 'alpha', FP2, T);
      assert.deepEqual(p.list().map((r) => [r.release, r.tool]), [['r@1', 'alpha'], ['r@1', 'send'], ['r@2', 'send']]);
      assert.equal(p.promote('r@1', 'send', T + 1), false, 'nothing awaits review');
      p.setObserved('r@1', 'send', FP2);
    });
    const o = await peer();
    const other = o.pins;
    await tx(o, () => {
      assert.equal(other.get('r@1', 'send')!.observed, FP2, 'another connection sees the change');
      assert.equal(other.promote('r@1', 'send', T + 2), true);
    });
    await tx(store, () => {
      assert.deepEqual(p.get('r@1', 'send'), { release: 'r@1', tool: 'send', digest: FP2, observed: null, pinned_at: T + 2 });
      p.setObserved('r@1', 'send', FP);
      p.setObserved('r@1', 'send', null);
    });
    assert.equal((await tx(store, () => p.get('r@1', 'send')))!.observed, null);
  });

  test(`${name} pins: the jobs of one transaction read a pin as the jobs before them left it; a failed job's change never`, async () => {
    const { store, peer } = await open();
    const p = store.pins;
    const fail = new Error('this job fails after its change');
    const seen = await Promise.allSettled([
      tx(store, () => {
        assert.equal(p.get('r@1', 'send'), null);
        p.insert('r@1', 'send', FP, T);
      }),
      tx(store, () => p.get('r@1', 'send')),
      tx(store, () => {
        p.setObserved('r@1', 'send', FP2);
        throw fail;
      }),
      tx(store, () => p.get('r@1', 'send')!.observed),
      tx(store, () => p.setObserved('r@1', 'send', FP2)),
      tx(store, () => p.get('r@1', 'send')!.observed),
      tx(store, () => p.promote('r@1', 'send', T + 1)),
      tx(store, () => p.get('r@1', 'send')),
    ]);
    assert.deepEqual(seen.map((x) => x.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    const value = (i: number) => (seen[i] as PromiseFulfilledResult<unknown>).value;
    assert.deepEqual(value(1), { release: 'r@1', tool: 'send', digest: FP, observed: null, pinned_at: T });
    assert.equal(value(3), null, 'the failed job left no change');
    assert.equal(value(5), FP2);
    assert.equal(value(6), true);
    assert.deepEqual(value(7), { release: 'r@1', tool: 'send', digest: FP2, observed: null, pinned_at: T + 1 });
    // Another connection changes the pin between two transactions: the next one reads it anew.
    const o = await peer();
    await tx(o, () => o.pins.setObserved('r@1', 'send', FP));
    assert.equal((await tx(store, () => p.get('r@1', 'send')))!.observed, FP);
  });
}
