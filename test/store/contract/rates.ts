// Contract: rate windows (product.md section 4) slide exactly, per task and tool, and count the
// calls of every connection (gate) on the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../src/store/ports.js';
import { T, type StoreFactory } from './harness.js';

export function ratesContract(name: string, open: StoreFactory): void {
  test(`${name} rates: minute, hour and day windows slide, per tool and for all tools, per task`, async () => {
    const { store } = await open();
    const rc = store.rates;
    rc.record('T-1', 'send_email', T);
    rc.record('T-1', 'send_email', T + 30_000);
    rc.record('T-1', 'lookup_customer', T + 40_000);
    rc.record('T-2', 'send_email', T + 40_000);
    const now = T + 50_000;
    assert.deepEqual(rc.counts('T-1', 'send_email', now), { calls: { minute: 2, hour: 2, day: 2 }, callsAll: { minute: 3, hour: 3, day: 3 } });
    assert.deepEqual(rc.counts('T-2', 'send_email', now).calls, { minute: 1, hour: 1, day: 1 });
    assert.deepEqual(rc.counts('T-3', 'send_email', now), { calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } });
    assert.deepEqual(rc.counts('T-1', 'send_email', T + MINUTE_MS).calls, { minute: 1, hour: 2, day: 2 }, 'exactly at the edge a call leaves the window');
    assert.deepEqual(rc.counts('T-1', 'send_email', T + HOUR_MS + 30_000).calls, { minute: 0, hour: 0, day: 2 });
    assert.deepEqual(rc.counts('T-1', 'send_email', T + DAY_MS + 30_000).calls, { minute: 0, hour: 0, day: 0 });
    rc.record(null, 'send_email', now);
    assert.equal(rc.counts(null, 'send_email', now).calls.minute, 1, 'calls without a task share one key');
  });

  test(`${name} rates: every connection counts into the same windows`, async () => {
    const { store, peer } = await open();
    const other = await peer();
    for (let i = 0; i < 6; i++) (i % 2 ? other : store).rates.record('T', 'send_email', T + i);
    assert.equal(store.rates.counts('T', 'send_email', T + 10).calls.hour, 6);
    assert.equal(other.rates.counts('T', 'send_email', T + 10).calls.hour, 6);
  });

  test(`${name} rates: a call stamped after now (a clock stepped back) counts in every window`, async () => {
    const { store } = await open();
    store.rates.record('T', 't', T + 5 * MINUTE_MS);
    store.rates.record('T', 't', T);
    assert.deepEqual(store.rates.counts('T', 't', T + 1).calls, { minute: 2, hour: 2, day: 2 });
  });
}
