// Contract: rate windows (product.md section 4) slide exactly, per task and tool, and count the
// calls of every connection (gate) on the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../src/store/ports.js';
import { T, tx, type StoreFactory } from './harness.js';

export function ratesContract(name: string, open: StoreFactory): void {
  test(`${name} rates: minute, hour and day windows slide, per tool and for all tools, per task`, async () => {
    const { store } = await open();
    const rc = store.rates;
    await tx(store, () => {
      rc.record('T-1', 'send_email', T);
      rc.record('T-1', 'send_email', T + 30_000);
    });
    await tx(store, () => {
      rc.record('T-1', 'lookup_customer', T + 40_000);
      rc.record('T-2', 'send_email', T + 40_000);
    });
    const now = T + 50_000;
    await tx(store, () => {
      assert.deepEqual(rc.counts('T-1', 'send_email', now), { calls: { minute: 2, hour: 2, day: 2 }, callsAll: { minute: 3, hour: 3, day: 3 } });
      assert.deepEqual(rc.counts('T-2', 'send_email', now).calls, { minute: 1, hour: 1, day: 1 });
      assert.deepEqual(rc.counts('T-3', 'send_email', now), { calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } });
      assert.deepEqual(rc.counts('T-1', 'send_email', T + MINUTE_MS).calls, { minute: 1, hour: 2, day: 2 }, 'exactly at the edge a call leaves the window');
      assert.deepEqual(rc.counts('T-1', 'send_email', T + HOUR_MS + 30_000).calls, { minute: 0, hour: 0, day: 2 });
      assert.deepEqual(rc.counts('T-1', 'send_email', T + DAY_MS).calls, { minute: 0, hour: 0, day: 1 }, 'exactly at the day edge');
      assert.deepEqual(rc.counts('T-1', 'send_email', T + DAY_MS + 30_000).calls, { minute: 0, hour: 0, day: 0 });
      rc.record(null, 'send_email', now);
      assert.equal(rc.counts(null, 'send_email', now).calls.minute, 1, 'a call recorded is counted in the same transaction; calls without a task share one key');
    });
    assert.equal(await tx(store, () => rc.counts(null, 'send_email', now).calls.minute), 1, 'and after it committed');
  });

  test(`${name} rates: the jobs of one transaction count what the jobs before them recorded, whether those read the windows or not; a failed job's calls never`, async () => {
    const { store } = await open();
    const rc = store.rates;
    const fail = new Error('this job fails after recording');
    // Queued in one turn: one transaction, a savepoint per job.
    const seen = await Promise.allSettled([
      tx(store, () => {
        const c = rc.counts('T-1', 'a', T);
        rc.record('T-1', 'a', T);
        return c;
      }),
      tx(store, () => rc.record('T-1', 'b', T + 1)), // records without reading the windows
      tx(store, () => {
        rc.record('T-1', 'a', T + 2);
        throw fail;
      }),
      tx(store, () => rc.record('T-2', 'a', T + 2)), // another task
      tx(store, () => {
        const c = rc.counts('T-1', 'a', T + 3);
        rc.record('T-1', 'a', T + 3);
        return c;
      }),
      tx(store, () => rc.counts('T-1', 'a', T + 4)),
    ]);
    assert.deepEqual(seen.map((x) => x.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    const counts = (i: number) => (seen[i] as PromiseFulfilledResult<ReturnType<typeof rc.counts>>).value;
    assert.deepEqual(counts(0), { calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } });
    assert.deepEqual(counts(4), { calls: { minute: 1, hour: 1, day: 1 }, callsAll: { minute: 2, hour: 2, day: 2 } });
    assert.deepEqual(counts(5), { calls: { minute: 2, hour: 2, day: 2 }, callsAll: { minute: 3, hour: 3, day: 3 } });
    assert.deepEqual(await tx(store, () => rc.counts('T-1', 'a', T + 5)), counts(5), 'and the same once committed');
    assert.deepEqual(await tx(store, () => rc.counts('T-2', 'a', T + 5).callsAll), { minute: 1, hour: 1, day: 1 });
  });

  test(`${name} rates: the day window counts calls from every part of the day`, async () => {
    const { store } = await open();
    const at = [1, 2 * HOUR_MS, 12 * HOUR_MS, DAY_MS - HOUR_MS + 10, DAY_MS - 30_000];
    await tx(store, () => {
      for (const t of at) store.rates.record('T', 'x', T + t);
    });
    await tx(store, () => {
      assert.deepEqual(store.rates.counts('T', 'x', T + DAY_MS).calls, { minute: 1, hour: 2, day: 5 });
      assert.deepEqual(store.rates.counts('T', 'x', T + DAY_MS + 2).calls, { minute: 1, hour: 2, day: 4 });
      assert.deepEqual(store.rates.counts('T', 'y', T + DAY_MS).callsAll, { minute: 1, hour: 2, day: 5 });
    });
  });

  test(`${name} rates: every connection counts into the same windows`, async () => {
    const { store, peer } = await open();
    const other = await peer();
    for (let i = 0; i < 6; i++) {
      const s = i % 2 ? other : store;
      await tx(s, () => s.rates.record('T', 'send_email', T + i));
    }
    assert.equal(await tx(store, () => store.rates.counts('T', 'send_email', T + 10).calls.hour), 6);
    assert.equal(await tx(other, () => other.rates.counts('T', 'send_email', T + 10).calls.hour), 6);
  });

  test(`${name} rates: a limit checked and counted in one transaction holds across connections`, async () => {
    const { store, peer } = await open();
    const stores = [store, await peer(), await peer()];
    const LIMIT = 10;
    const allowed = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const s = stores[i % stores.length];
        return tx(s, () => {
          if (s.rates.counts('T', 'send', T + 100).calls.minute >= LIMIT) return false;
          s.rates.record('T', 'send', T + 100);
          return true;
        });
      }),
    );
    assert.equal(allowed.filter(Boolean).length, LIMIT);
  });

  test(`${name} rates: a call stamped after now (a clock stepped back) counts in every window`, async () => {
    const { store } = await open();
    await tx(store, () => {
      store.rates.record('T', 't', T + 5 * MINUTE_MS);
      store.rates.record('T', 't', T);
    });
    assert.deepEqual(await tx(store, () => store.rates.counts('T', 't', T + 1).calls), { minute: 2, hour: 2, day: 2 });
  });
}
