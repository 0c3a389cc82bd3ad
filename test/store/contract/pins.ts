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
}
