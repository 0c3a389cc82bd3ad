// The gate's trim of approval requests on a shared PostgreSQL store (ADR 058) takes no lock it
// would wait for and none it does not need: a request another transaction holds (a gate
// refreshing it, an inbox deciding it) is skipped, not waited for, and the requests the bound
// keeps are left unlocked for the other gates while the trimming transaction is open.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { PgApprovalRequests } from '../../../src/store/postgres/approvals.js';
import { Unit, UnitSlot } from '../../../src/store/postgres/unit.js';
import type { ApprovalRequest } from '../../../src/store/ports.js';

const at = (s: number) => new Date(Date.parse('2026-11-30T08:00:00.000Z') + s * 1000).toISOString();
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const f of cleanup) await f();
});

function request(id: string, n: number, created: number): ApprovalRequest {
  return {
    id,
    fingerprint: 'sha256:' + n.toString(16).padStart(64, '0'),
    tool: 'send_email',
    call: '{"arguments":{"to":"x"},"tool":"send_email"}',
    task: null,
    label: 'internal',
    entry: 1,
    gate: null,
    rule: '{}',
    created_at: at(created),
    expires_at: at(created + 600),
  };
}

async function fresh(): Promise<{ schema: string; store: PostgresStore; other: pg.Client }> {
  const schema = freshSchema();
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const store = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', timeoutMs: 3000 });
  const other = new pg.Client({ connectionString: PG_URL });
  await other.connect();
  cleanup.push(async () => {
    await other.query('ROLLBACK').catch(() => undefined);
    await store.end();
    await other.end();
    await dropSchema(schema);
  });
  await store.transact(() => {
    for (let i = 0; i < 5; i++) store.approvalRequests.record(request(`r-${i}`, i, i)); // r-4 the newest
  });
  return { schema, store, other };
}

const ids = async (c: pg.Client, schema: string) => (await c.query<{ id: string }>(`SELECT id FROM ${schema}.approval_requests ORDER BY id`)).rows.map((r) => r.id);

test('postgres trim: a request another transaction holds is skipped, never waited for', pgSkip, async () => {
  const { schema, store, other } = await fresh();
  await store.transact(() => store.approvalRequests.record({ ...request('x-0', 9, 0), expires_at: at(1) }));
  // An inbox deciding r-0 (the oldest, past the bound) and one pruning x-0 (expired) hold their rows.
  await other.query('BEGIN');
  await other.query(`SELECT id FROM ${schema}.approval_requests WHERE id IN ('r-0', 'x-0') FOR UPDATE`);
  const started = Date.now();
  await store.transact(() => {
    const own = store.approvalRequests.record(request('r-5', 5, 5));
    store.approvalRequests.trim(at(10), 3, own);
  });
  assert.ok(Date.now() - started < 1500, `the trim waited ${Date.now() - started} ms for a lock`);
  await other.query('COMMIT');
  assert.deepEqual(await ids(other, schema), ['r-0', 'r-3', 'r-4', 'r-5', 'x-0'], 'r-1 and r-2 went; r-0 and x-0, held, were skipped');
  await store.transact(() => store.approvalRequests.trim(at(10), 3, 'r-5'));
  assert.deepEqual(await ids(other, schema), ['r-3', 'r-4', 'r-5'], 'once free, the next trim takes them');
});

test('postgres trim: the requests the bound keeps stay unlocked while the trimming transaction is open', pgSkip, async () => {
  const { schema, other } = await fresh();
  // The port's own writes, run in a transaction this test holds open.
  const slot = new UnitSlot();
  const unit = new Unit();
  slot.current = unit;
  new PgApprovalRequests(slot, schema).trim(at(10), 3, 'r-4');
  slot.current = null;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query('BEGIN');
    for (const w of unit.writes) await w(c);
    for (const kept of ['r-2', 'r-3']) {
      await other.query('BEGIN');
      const r = await other.query(`SELECT id FROM ${schema}.approval_requests WHERE id = $1 FOR UPDATE NOWAIT`, [kept]);
      assert.equal(r.rowCount, 1, `${kept} is kept and can be locked by another gate`);
      await other.query('ROLLBACK');
    }
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
  assert.deepEqual(await ids(other, schema), ['r-2', 'r-3', 'r-4']);
});
