// Durable sliding-window counts feeding Cedar: the example's email limit reached at the 5th
// allowed call within the hour, per task, and still counted after the database is reopened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { RateCounter, MINUTE_MS, HOUR_MS, DAY_MS } from '../../src/store/rate-counter.js';
import { loadPolicyFile, type PolicyEngine } from '../../src/policy/engine.js';
import { EXAMPLE, exampleManifest, exampleTask, request, tempDir } from './fixtures.js';

function open(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  return db;
}

const T0 = Date.UTC(2026, 10, 30, 9, 0, 0);

test('windows slide: minute, hour and day, per tool and for all tools, per task', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db);
  rc.record('T-1', 'send_email', T0);
  rc.record('T-1', 'send_email', T0 + 30_000);
  rc.record('T-1', 'lookup_customer', T0 + 40_000);
  rc.record('T-2', 'send_email', T0 + 40_000);
  const now = T0 + 50_000;
  assert.deepEqual(rc.counts('T-1', 'send_email', now), {
    calls: { minute: 2, hour: 2, day: 2 },
    callsAll: { minute: 3, hour: 3, day: 3 },
  });
  assert.deepEqual(rc.counts('T-2', 'send_email', now).calls, { minute: 1, hour: 1, day: 1 });
  assert.deepEqual(rc.counts('T-3', 'send_email', now), { calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } });
  // exactly at the edge a call leaves the window
  assert.deepEqual(rc.counts('T-1', 'send_email', T0 + MINUTE_MS).calls, { minute: 1, hour: 2, day: 2 });
  assert.deepEqual(rc.counts('T-1', 'send_email', T0 + HOUR_MS + 30_000).calls, { minute: 0, hour: 0, day: 2 });
  assert.deepEqual(rc.counts('T-1', 'send_email', T0 + DAY_MS + 30_000).calls, { minute: 0, hour: 0, day: 0 });
  // calls without a task share one key
  rc.record(null, 'send_email', now);
  assert.equal(rc.counts(null, 'send_email', now).calls.minute, 1);
  db.close();
});

test('rows older than a day are pruned', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db);
  rc.record('T-1', 'a', T0);
  rc.record('T-1', 'a', T0 + DAY_MS + 1);
  const n = (db.prepare('SELECT COUNT(*) AS n FROM rate_calls').get() as { n: number }).n;
  assert.equal(n, 1);
  db.close();
});

test('the counter uses its indexes', () => {
  const db = open(join(tempDir(), 'rates.db'));
  new RateCounter(db);
  const plan = db
    .prepare('EXPLAIN QUERY PLAN SELECT COUNT(*) FROM rate_calls WHERE task_id = ? AND tool = ? AND at_ms > ?')
    .all('T', 't', 0) as { detail: string }[];
  assert.match(plan.map((p) => p.detail).join(' '), /USING (COVERING )?INDEX rate_calls_task_tool_at/);
  db.close();
});

// What the gate does for one call: count, ask Cedar, record only if allowed.
function gateCall(engine: PolicyEngine, rc: RateCounter, task: ReturnType<typeof exampleTask>, now: number): boolean {
  const c = rc.counts(task.id as string, 'send_email', now);
  const d = engine.evaluate(request({ tool: 'send_email', args: { to: 'ada@example.com' }, task, calls: c.calls, callsAll: c.callsAll }));
  if (d.allow) rc.record(task.id as string, 'send_email', now);
  return d.allow;
}

test('example email limit: five emails in an hour, the sixth refused, another task unaffected, a restart keeps counting', () => {
  const path = join(tempDir(), 'gate.db');
  const engine = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  const task = exampleTask();
  const other = { ...task, id: 'T-2000' };

  let db = open(path);
  let rc = new RateCounter(db);
  for (let i = 0; i < 3; i++) assert.equal(gateCall(engine, rc, task, T0 + i * 60_000), true, `call ${i + 1}`);
  db.close();

  // restart: a new connection, a new counter, the same file
  db = open(path);
  rc = new RateCounter(db);
  assert.equal(rc.counts(task.id as string, 'send_email', T0 + 3 * 60_000).calls.hour, 3);
  assert.equal(gateCall(engine, rc, task, T0 + 3 * 60_000), true, 'call 4');
  assert.equal(gateCall(engine, rc, task, T0 + 4 * 60_000), true, 'call 5');
  assert.equal(gateCall(engine, rc, task, T0 + 5 * 60_000), false, 'call 6: 5 already allowed within the hour');
  const x = engine.explain(request({ tool: 'send_email', args: { to: 'ada@example.com' }, task, ...rc.counts(task.id as string, 'send_email', T0 + 5 * 60_000) }));
  assert.deepEqual(x.policyIds, ['email-hourly-limit']);
  // refused calls are not counted
  assert.equal(rc.counts(task.id as string, 'send_email', T0 + 5 * 60_000).calls.hour, 5);
  // another task has its own count
  assert.equal(gateCall(engine, rc, other, T0 + 5 * 60_000), true, 'other task');
  // the window slides: an hour after the first call, one slot frees up
  assert.equal(gateCall(engine, rc, task, T0 + HOUR_MS + 1), true, 'after the first call left the hour');
  assert.equal(gateCall(engine, rc, task, T0 + HOUR_MS + 2), false);
  db.close();
});

test('record runs inside the caller transaction and rolls back with it', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db);
  const tx = db.transaction(() => {
    rc.record('T-1', 'x', T0);
    throw new Error('ledger append failed');
  });
  assert.throws(() => tx(), /ledger append failed/);
  assert.equal(rc.counts('T-1', 'x', T0).calls.minute, 0);
  db.close();
});
