// Contract: rate windows (product.md section 4) slide exactly, per task and tool, and count the
// calls of every connection (gate) on the store. A store with a clock of its own (PostgreSQL:
// the database's, ADR 060) counts and stamps by it: the tests set it (harness `clock`) to the
// time they pass as `now`, one time per transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../src/store/ports.js';
import { T, tx, type OpenedForTest, type StoreFactory } from './harness.js';
import type { Store } from '../../../src/store/ports.js';

/** One transaction on `store` at `ms`: the store's clock set there, and `ms` passed as `now`. */
function at(o: OpenedForTest) {
  return async <R>(store: Store, ms: number, fn: (now: number) => R): Promise<R> => {
    await o.clock?.(ms);
    return tx(store, () => fn(ms));
  };
}

export function ratesContract(name: string, open: StoreFactory): void {
  test(`${name} rates: minute, hour and day windows slide, per tool and for all tools, per task`, async () => {
    const o = await open();
    const { store } = o;
    const rc = store.rates;
    const when = at(o);
    await when(store, T, (now) => rc.record('T-1', 'send_email', now));
    await when(store, T + 30_000, (now) => rc.record('T-1', 'send_email', now));
    await when(store, T + 40_000, (now) => {
      rc.record('T-1', 'lookup_customer', now);
      rc.record('T-2', 'send_email', now);
    });
    const now = T + 50_000;
    await when(store, now, (now) => {
      assert.deepEqual(rc.counts('T-1', 'send_email', now), { calls: { minute: 2, hour: 2, day: 2 }, callsAll: { minute: 3, hour: 3, day: 3 } });
      assert.deepEqual(rc.counts('T-2', 'send_email', now).calls, { minute: 1, hour: 1, day: 1 });
      assert.deepEqual(rc.counts('T-3', 'send_email', now), { calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } });
    });
    const seen = (ms: number) => when(store, ms, (now) => rc.counts('T-1', 'send_email', now).calls);
    assert.deepEqual(await seen(T + MINUTE_MS), { minute: 1, hour: 2, day: 2 }, 'exactly at the edge a call leaves the window');
    assert.deepEqual(await seen(T + HOUR_MS + 30_000), { minute: 0, hour: 0, day: 2 });
    assert.deepEqual(await seen(T + DAY_MS), { minute: 0, hour: 0, day: 1 }, 'exactly at the day edge');
    assert.deepEqual(await seen(T + DAY_MS + 30_000), { minute: 0, hour: 0, day: 0 });
    await when(store, now, (now) => {
      rc.record(null, 'send_email', now);
      assert.equal(rc.counts(null, 'send_email', now).calls.minute, 1, 'a call recorded is counted in the same transaction; calls without a task share one key');
    });
    assert.equal(await when(store, now, (now) => rc.counts(null, 'send_email', now).calls.minute), 1, 'and after it committed');
  });

  test(`${name} rates: the jobs of one transaction count what the jobs before them recorded, whether those read the windows or not; a failed job's calls never`, async () => {
    const o = await open();
    const { store } = o;
    const rc = store.rates;
    const fail = new Error('this job fails after recording');
    await o.clock?.(T);
    // Queued in one turn: one transaction, a savepoint per job.
    const seen = await Promise.allSettled([
      tx(store, () => {
        const c = rc.counts('T-1', 'a', T);
        rc.record('T-1', 'a', T);
        return c;
      }),
      tx(store, () => rc.record('T-1', 'b', T)), // records without reading the windows
      tx(store, () => {
        rc.record('T-1', 'a', T);
        throw fail;
      }),
      tx(store, () => rc.record('T-2', 'a', T)), // another task
      tx(store, () => {
        const c = rc.counts('T-1', 'a', T);
        rc.record('T-1', 'a', T);
        return c;
      }),
      tx(store, () => rc.counts('T-1', 'a', T)),
    ]);
    assert.deepEqual(seen.map((x) => x.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    const counts = (i: number) => (seen[i] as PromiseFulfilledResult<ReturnType<typeof rc.counts>>).value;
    assert.deepEqual(counts(0), { calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } });
    assert.deepEqual(counts(4), { calls: { minute: 1, hour: 1, day: 1 }, callsAll: { minute: 2, hour: 2, day: 2 } });
    assert.deepEqual(counts(5), { calls: { minute: 2, hour: 2, day: 2 }, callsAll: { minute: 3, hour: 3, day: 3 } });
    await o.clock?.(T + 5);
    assert.deepEqual(await tx(store, () => rc.counts('T-1', 'a', T + 5)), counts(5), 'and the same once committed');
    assert.deepEqual(await tx(store, () => rc.counts('T-2', 'a', T + 5).callsAll), { minute: 1, hour: 1, day: 1 });
  });

  test(`${name} rates: the day window counts calls from every part of the day`, async () => {
    const o = await open();
    const { store } = o;
    const when = at(o);
    for (const t of [1, 2 * HOUR_MS, 12 * HOUR_MS, DAY_MS - HOUR_MS + 10, DAY_MS - 30_000]) await when(store, T + t, (now) => store.rates.record('T', 'x', now));
    await when(store, T + DAY_MS, (now) => {
      assert.deepEqual(store.rates.counts('T', 'x', now).calls, { minute: 1, hour: 2, day: 5 });
      assert.deepEqual(store.rates.counts('T', 'y', now).callsAll, { minute: 1, hour: 2, day: 5 });
    });
    await when(store, T + DAY_MS + 2, (now) => assert.deepEqual(store.rates.counts('T', 'x', now).calls, { minute: 1, hour: 2, day: 4 }));
  });

  test(`${name} rates: every connection counts into the same windows`, async () => {
    const o = await open();
    const { store, peer } = o;
    const when = at(o);
    const other = await peer();
    for (let i = 0; i < 6; i++) {
      const s = i % 2 ? other : store;
      await when(s, T + i, (now) => s.rates.record('T', 'send_email', now));
    }
    assert.equal(await when(store, T + 10, (now) => store.rates.counts('T', 'send_email', now).calls.hour), 6);
    assert.equal(await when(other, T + 10, (now) => other.rates.counts('T', 'send_email', now).calls.hour), 6);
  });

  test(`${name} rates: a limit checked and counted in one transaction holds across connections`, async () => {
    const o = await open();
    const { store, peer } = o;
    const stores = [store, await peer(), await peer()];
    const LIMIT = 10;
    await o.clock?.(T + 100);
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
    const o = await open();
    const { store } = o;
    const when = at(o);
    await when(store, T + 5 * MINUTE_MS, (now) => store.rates.record('T', 't', now));
    await when(store, T, (now) => store.rates.record('T', 't', now));
    assert.deepEqual(await when(store, T + 1, (now) => store.rates.counts('T', 't', now).calls), { minute: 2, hour: 2, day: 2 });
  });
}
