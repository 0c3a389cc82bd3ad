// Rate rows older than a day leave the shared table a step at a time (PRUNE_STEP), one step
// with each call once a backlog is found, so no call's transaction deletes a day's worth at once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { DAY_MS, PRUNE_STEP } from '../../../src/store/ports.js';

const T = Date.parse('2026-11-30T08:00:00.000Z');
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const f of cleanup) await f();
});

test('postgres rates: a backlog of old rows is pruned a step at a time, one step with each call', pgSkip, async () => {
  const schema = freshSchema();
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const store: PostgresStore = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a' });
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  cleanup.push(async () => {
    await store.end();
    await c.end();
    await dropSchema(schema);
  });
  const backlog = 2 * PRUNE_STEP + 100;
  await store.transact(() => {
    for (let i = 0; i < backlog; i++) store.rates.record('T-1', i % 2 ? 'a' : 'b', T + i);
  });
  const old = async () => Number((await c.query(`SELECT count(*) AS n FROM ${schema}.rate_calls WHERE at_ms < $1`, [T + DAY_MS])).rows[0].n);
  assert.equal(await old(), backlog, 'the first record pruned nothing older than a day');
  const left: number[] = [];
  for (let k = 1; k <= 4; k++) {
    await store.transact(() => store.rates.record('T-1', 'a', T + 2 * DAY_MS + k));
    left.push(await old());
  }
  assert.deepEqual(left, [backlog - PRUNE_STEP, backlog - 2 * PRUNE_STEP, 0, 0]);
  const counts = await store.transact(() => store.rates.counts('T-1', 'a', T + 2 * DAY_MS + 10));
  assert.deepEqual(counts, { calls: { minute: 4, hour: 4, day: 4 }, callsAll: { minute: 4, hour: 4, day: 4 } });
});

test("postgres rates: a gate whose clock runs ahead does not prune rows another gate still counts", pgSkip, async () => {
  const schema = freshSchema();
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const ahead: PostgresStore = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a' });
  const behind: PostgresStore = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a' });
  cleanup.push(async () => {
    await ahead.end();
    await behind.end();
    await dropSchema(schema);
  });
  await behind.transact(() => behind.rates.record('T-1', 'a', T));
  // 30 minutes ahead of the other gate, a day later: its prune runs.
  await ahead.transact(() => ahead.rates.record('T-1', 'a', T + DAY_MS + 30 * 60_000));
  // The other gate, a minute before its call at T leaves its day window, still counts it.
  const counts = await behind.transact(() => behind.rates.counts('T-1', 'a', T + DAY_MS - 60_000));
  assert.equal(counts.calls.day, 2, 'the call at T and the one stamped ahead (counted, the safe direction)');
});
