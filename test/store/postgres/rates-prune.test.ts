// Rate rows older than a day leave the shared table a step at a time (PRUNE_STEP), one step
// with each call once a backlog is found, so no call's transaction deletes a day's worth at once;
// and by the database's clock (ADR 060), so a gate whose own clock runs ahead prunes nothing
// another gate still counts.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { DAY_MS, HOUR_MS, PRUNE_STEP } from '../../../src/store/ports.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const f of cleanup) await f();
});

async function fresh(n = 1): Promise<{ schema: string; stores: PostgresStore[]; c: pg.Client; dbNow: () => Promise<number> }> {
  const schema = freshSchema();
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const stores: PostgresStore[] = [];
  for (let i = 0; i < n; i++) stores.push(await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a' }));
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  cleanup.push(async () => {
    for (const s of stores) await s.end();
    await c.end();
    await dropSchema(schema);
  });
  return { schema, stores, c, dbNow: async () => Number((await c.query(`SELECT ${schema}.clock_ms() AS t`)).rows[0].t) };
}

test('postgres rates: a backlog of old rows is pruned a step at a time, one step with each call', pgSkip, async () => {
  const { schema, stores: [store], c, dbNow } = await fresh();
  const backlog = 2 * PRUNE_STEP + 100;
  const t0 = (await dbNow()) - 3 * DAY_MS;
  await c.query(`INSERT INTO ${schema}.rate_calls (task_key, tool, at_ms) SELECT 'T-1', CASE WHEN i % 2 = 1 THEN 'a' ELSE 'b' END, $1::bigint + i FROM generate_series(0, $2::int - 1) AS i`, [t0, backlog]);
  const old = async () => Number((await c.query(`SELECT count(*) AS n FROM ${schema}.rate_calls WHERE at_ms < $1`, [t0 + DAY_MS])).rows[0].n);
  assert.equal(await old(), backlog);
  const left: number[] = [];
  for (let k = 1; k <= 4; k++) {
    await store.transact(() => store.rates.record('T-1', 'a', Date.now()));
    left.push(await old());
  }
  assert.deepEqual(left, [backlog - PRUNE_STEP, backlog - 2 * PRUNE_STEP, 0, 0]);
  const counts = await store.transact(() => store.rates.counts('T-1', 'a', Date.now()));
  assert.deepEqual(counts, { calls: { minute: 4, hour: 4, day: 4 }, callsAll: { minute: 4, hour: 4, day: 4 } });
});

test('postgres rates: a gate whose own clock runs days ahead prunes nothing another gate still counts', pgSkip, async () => {
  const { schema, stores: [ahead, other], c, dbNow } = await fresh(2);
  // A call 23 hours ago (by the database's clock): inside every gate's day window.
  await c.query(`INSERT INTO ${schema}.rate_calls (task_key, tool, at_ms) VALUES ('T-1', 'a', $1)`, [(await dbNow()) - 23 * HOUR_MS]);
  // The gate's first call prunes; its clock says two days have passed.
  await ahead.transact(() => ahead.rates.record('T-1', 'a', Date.now() + 2 * DAY_MS));
  const counts = await other.transact(() => other.rates.counts('T-1', 'a', Date.now()));
  assert.equal(counts.calls.day, 2, 'the call 23 hours ago and the one just made');
});
