// Rate windows on a fleet count by one clock, the database's (ADR 060): gates whose own clocks
// run ahead or behind (the `now` they pass) against one database hold a limit exactly, and the
// calls are stamped with the database's time, not theirs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { MINUTE_MS } from '../../../src/store/ports.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const f of cleanup) await f();
});

test('postgres rates: three gates with clocks 30 minutes apart hold a limit of 10 a minute exactly, stamped by the database', pgSkip, async () => {
  const schema = freshSchema();
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  const gates: { store: PostgresStore; clock: () => number }[] = [];
  for (const skew of [0, 30 * MINUTE_MS, -30 * MINUTE_MS]) gates.push({ store: await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a' }), clock: () => Date.now() + skew });
  cleanup.push(async () => {
    for (const g of gates) await g.store.end();
    await c.end();
    await dropSchema(schema);
  });
  const LIMIT = 10;
  // What the gate's policy check does: count, allow below the limit, record (one transaction).
  const decide = ({ store, clock }: (typeof gates)[number]) =>
    store.transact(() => {
      const now = clock();
      if (store.rates.counts('T-1', 'send', now).calls.minute >= LIMIT) return false;
      store.rates.record('T-1', 'send', now);
      return true;
    });
  const before = Number((await c.query(`SELECT ${schema}.clock_ms() AS t`)).rows[0].t);
  // One after another, each gate in turn: every decision sees all the others committed.
  const serial: boolean[] = [];
  for (let i = 0; i < 30; i++) serial.push(await decide(gates[i % gates.length]));
  assert.equal(serial.filter(Boolean).length, LIMIT, JSON.stringify(serial));
  // And all at once, on another task.
  const task2 = ({ store, clock }: (typeof gates)[number]) =>
    store.transact(() => {
      const now = clock();
      if (store.rates.counts('T-2', 'send', now).calls.minute >= LIMIT) return false;
      store.rates.record('T-2', 'send', now);
      return true;
    });
  const burst = await Promise.all(Array.from({ length: 60 }, (_, i) => task2(gates[i % gates.length])));
  assert.equal(burst.filter(Boolean).length, LIMIT);
  const after_ = Number((await c.query(`SELECT ${schema}.clock_ms() AS t`)).rows[0].t);
  const stamps = (await c.query(`SELECT at_ms FROM ${schema}.rate_calls`)).rows.map((r) => Number(r.at_ms));
  assert.equal(stamps.length, 2 * LIMIT);
  for (const t of stamps) assert.ok(t >= before && t <= after_, `stamped ${t}, the database's clock ran from ${before} to ${after_}`);
});
