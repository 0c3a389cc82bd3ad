// Durable sliding-window counts feeding Cedar: the example's email limit reached at the 5th
// allowed call within the hour, per task, and still counted after the database is reopened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { SqliteRates as RateCounter } from '../../../src/store/sqlite/rates.js';
import { GroupCommit } from '../../../src/store/sqlite/group-commit.js';
import { MINUTE_MS, HOUR_MS, DAY_MS } from '../../../src/store/ports.js';
import { loadPolicyFile, type PolicyEngine } from '../../../src/policy/engine.js';
import { EXAMPLE, exampleManifest, exampleTask, request, tempDir } from '../../policy/fixtures.js';

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

test('a count the policies do not read is not looked up: the one read is the full count, the other zeros', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db);
  for (const [i, tool] of ['send_email', 'lookup_customer', 'send_email'].entries()) rc.record('T-1', tool, T0 + i * 1000);
  const now = T0 + 5000;
  const full = rc.counts('T-1', 'send_email', now);
  assert.deepEqual(full, { calls: { minute: 2, hour: 2, day: 2 }, callsAll: { minute: 3, hour: 3, day: 3 } });
  const zero = { minute: 0, hour: 0, day: 0 };
  assert.deepEqual(rc.counts('T-1', 'send_email', now, { calls: true, callsAll: false }), { calls: full.calls, callsAll: zero });
  assert.deepEqual(rc.counts('T-1', 'send_email', now, { calls: false, callsAll: true }), { calls: zero, callsAll: full.callsAll });
  assert.deepEqual(rc.counts('T-1', 'send_email', now, { calls: false, callsAll: false }), { calls: zero, callsAll: zero });
  assert.deepEqual(rc.counts('T-1', 'send_email', now, { calls: true, callsAll: true }), full);
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

test('a backlog of old rows is pruned a step at a time, one step with each call, until none is left', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db, 3);
  for (let i = 0; i < 20; i++) rc.record(i % 2 ? 'T-1' : 'T-2', i % 3 ? 'a' : 'b', T0 + i);
  const old = () => (db.prepare('SELECT COUNT(*) AS n FROM rate_calls WHERE at_ms < ?').get(T0 + DAY_MS) as { n: number }).n;
  assert.equal(old(), 20);
  const left: number[] = [];
  for (let k = 1; k <= 8; k++) {
    rc.record('T-1', 'a', T0 + DAY_MS + 100 + k); // a second apart: only the backlog makes them prune
    left.push(old());
  }
  assert.deepEqual(left, [17, 14, 11, 8, 5, 2, 0, 0]);
  assert.deepEqual(rc.counts('T-1', 'a', T0 + DAY_MS + 200), { calls: { minute: 8, hour: 8, day: 8 }, callsAll: { minute: 8, hour: 8, day: 8 } });
  const plan = (db.prepare('EXPLAIN QUERY PLAN ' + (rc as unknown as { prune: { source: string } }).prune.source).all(0) as { detail: string }[]).map((p) => p.detail);
  assert.ok(plan.some((d) => /USING COVERING INDEX rate_calls_at/.test(d)), plan.join('\n'));
  assert.ok(!plan.some((d) => /TEMP B-TREE|^SCAN rate_calls/.test(d)), plan.join('\n'));
  db.close();
});

test('property: pruned a few rows at a time, the windows still equal the naive count', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), fc.integer({ min: 1, max: 4 }), (ops, step) => {
      const db = new Database(':memory:');
      try {
        replay(ops, [new RateCounter(db, step)], undefined, () => db);
      } finally {
        db.close();
      }
    }),
    { numRuns: 300 },
  );
});

test('the counter uses its indexes: every window is a few seeks, no scan of the day', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db);
  rc.record('T', 't', T0);
  const details: string[] = [];
  const plan = (sql: string) => details.push(...(db.prepare('EXPLAIN QUERY PLAN ' + sql).all({ t: 'T', tool: 't', m: 1, h: 1, d: 1, now: 1 }) as { detail: string }[]).map((p) => p.detail));
  const internals = rc as unknown as Record<string, { source: string }>;
  plan(internals.totalsTool.source);
  plan(internals.totalsAll.source.replace(/@tool/g, "'t'"));
  const searches = details.filter((d) => d.startsWith('SEARCH'));
  assert.equal(searches.length, 10, details.join('\n'));
  for (const d of searches) assert.match(d, /^SEARCH rate_calls USING COVERING INDEX rate_calls_(tool|task)_n /);
  assert.ok(!details.some((d) => /TEMP B-TREE|^SCAN rate_calls/.test(d)), details.join('\n'));
  db.close();
});

// The reference: the windows counted the obvious way, over the same rows, pruned the same way
// (rows at or before now − day dropped when record() runs, at most once a minute).
class NaiveCounter {
  rows: { t: string; tool: string; at: number }[] = [];
  private lastPrune = -Infinity;
  record(t: string | null, tool: string, now: number) {
    this.rows.push({ t: t ?? '', tool, at: now });
    if (now - this.lastPrune >= MINUTE_MS || now < this.lastPrune) {
      this.rows = this.rows.filter((r) => r.at > now - DAY_MS);
      this.lastPrune = now;
    }
  }
  counts(t: string | null, tool: string, now: number) {
    const w = (rows: { at: number }[]) => ({
      minute: rows.filter((r) => r.at > now - MINUTE_MS).length,
      hour: rows.filter((r) => r.at > now - HOUR_MS).length,
      day: rows.filter((r) => r.at > now - DAY_MS).length,
    });
    const mine = this.rows.filter((r) => r.t === (t ?? ''));
    return { calls: w(mine.filter((r) => r.tool === tool)), callsAll: w(mine) };
  }
}

type Op = { kind: 'record' | 'count' | 'edge'; task: string | null; tool: string; dt: number; edge: number };
const TASKS = ['T-1', 'T-2', null];
const TOOLS = ['a', 'b'];
const EDGES = [0, MINUTE_MS, HOUR_MS, DAY_MS];
// Mostly forward in small steps, sometimes a jump across a window, sometimes back (a clock
// stepped back, or two gates committing in the other order than they read the clock); `edge`
// asks again exactly at, one before and one after the edge of a window of the last record.
const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom<Op['kind']>('record', 'record', 'record', 'count', 'edge'),
  task: fc.constantFrom(...TASKS),
  tool: fc.constantFrom(...TOOLS),
  dt: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 5_000 }) },
    { weight: 2, arbitrary: fc.constantFrom(0, 1, MINUTE_MS, MINUTE_MS - 1, HOUR_MS, HOUR_MS + 1, DAY_MS, DAY_MS - 1, DAY_MS + 1) },
    { weight: 1, arbitrary: fc.integer({ min: -HOUR_MS, max: -1 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 * DAY_MS }) },
  ),
  edge: fc.integer({ min: 0, max: EDGES.length * 3 - 1 }),
});

/** Replays `ops`, checking every window after each; `table` (when given) makes the reference
 *  the naive count over the rows actually in the table instead of the model's own rows. */
function replay(ops: Op[], rcs: RateCounter[], restart?: (i: number) => RateCounter[], table?: () => Database.Database) {
  const ref = new NaiveCounter();
  let now = T0;
  let lastRecorded = T0;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (restart) rcs = restart(i);
    const rc = rcs[i % rcs.length];
    now += op.dt;
    if (op.kind === 'record') {
      rc.record(op.task, op.tool, now);
      ref.record(op.task, op.tool, now);
      lastRecorded = now;
    }
    const at = op.kind === 'edge' ? lastRecorded + EDGES[Math.floor(op.edge / 3)] + ((op.edge % 3) - 1) : now;
    if (table) ref.rows = (table().prepare('SELECT task_id AS t, tool, at_ms AS at FROM rate_calls').all() as NaiveCounter['rows']);
    for (const task of TASKS) for (const tool of TOOLS) assert.deepEqual(rc.counts(task, tool, at), ref.counts(task, tool, at), `op ${i} at ${at - T0}: ${task} ${tool}`);
  }
}

test('property: the windows equal the naive count over randomized timelines, edges included', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
      const db = new Database(':memory:');
      try {
        replay(ops, [new RateCounter(db)]);
      } finally {
        db.close();
      }
    }),
    { numRuns: 300 },
  );
});

test('property: two gates on one home (two connections, interleaved) and restarts keep the counts exact', () => {
  const dir = tempDir();
  let k = 0;
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), fc.integer({ min: 1, max: 10 }), (ops, every) => {
      const path = join(dir, `two-${k++}.db`);
      let dbs = [open(path), open(path)];
      let rcs = dbs.map((d) => new RateCounter(d));
      try {
        // Each gate prunes on its own schedule, so the reference is the rows in the table.
        replay(
          ops,
          rcs,
          (i) => {
            if (i > 0 && i % every === 0) {
              for (const d of dbs) d.close();
              dbs = [open(path), open(path)];
              rcs = dbs.map((d) => new RateCounter(d));
            }
            return rcs;
          },
          () => dbs[0],
        );
      } finally {
        for (const d of dbs) if (d.open) d.close();
      }
    }),
    { numRuns: 60 },
  );
});

test('property: inside group commits (the group numbers rows from those it wrote), with jobs rolled back and two gates taking turns, the counts stay exact', async () => {
  const dir = tempDir();
  let k = 0;
  await fc.assert(
    fc.asyncProperty(
      // Mostly the same task and tool a few ms apart (a group numbering from its own rows), with
      // the steps back, jumps across windows and prunes of opArb now and then.
      fc.array(
        fc.record({
          op: fc.oneof(
            { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom<Op['kind']>('record', 'record', 'record', 'count'), task: fc.constantFrom('T-1', 'T-1', 'T-2'), tool: fc.constantFrom(...TOOLS), dt: fc.integer({ min: -2, max: 3 }), edge: fc.constant(0) }) },
            { weight: 1, arbitrary: opArb },
          ),
          fails: fc.integer({ min: 0, max: 5 }).map((x) => x === 0),
          group: fc.integer({ min: 0, max: 7 }).map((x) => x === 0),
        }),
        { maxLength: 80 },
      ),
      async (steps) => {
        const path = join(dir, `group-${k++}.db`);
        const dbs = [open(path), open(path)];
        const gates = dbs.map((db) => {
          const rc = new RateCounter(db);
          const commit = new GroupCommit(db);
          commit.enlist(rc.participant());
          return { rc, commit };
        });
        const ref = new NaiveCounter();
        const wrong: string[] = [];
        let now = T0;
        let lastRecorded = T0;
        let turn = 0;
        let jobs: Promise<unknown>[] = [];
        try {
          for (let i = 0; i < steps.length; i++) {
            const { op, fails } = steps[i];
            if (steps[i].group) {
              await Promise.allSettled(jobs); // this gate's group commits; the other one goes on
              jobs = [];
              turn++;
            }
            const { rc, commit } = gates[turn % 2];
            const db = dbs[turn % 2];
            now += op.dt;
            const t = now;
            const at = op.kind === 'edge' ? lastRecorded + EDGES[Math.floor(op.edge / 3)] + ((op.edge % 3) - 1) : now;
            if (op.kind === 'record' && !fails) lastRecorded = now;
            // Each job runs in the group's transaction; what it reads there is checked there.
            jobs.push(
              commit.run(() => {
                if (op.kind === 'record') {
                  rc.record(op.task, op.tool, t);
                  if (fails) throw new Error('a later check failed');
                }
                // Each gate prunes on its own schedule: the reference is the rows in the table.
                ref.rows = db.prepare('SELECT task_id AS t, tool, at_ms AS at FROM rate_calls').all() as NaiveCounter['rows'];
                for (const task of TASKS)
                  for (const tool of TOOLS) {
                    const got = JSON.stringify(rc.counts(task, tool, at));
                    const want = JSON.stringify(ref.counts(task, tool, at));
                    if (got !== want) wrong.push(`step ${i} at ${at - T0}: ${task} ${tool}: ${got} ≠ ${want}`);
                  }
              }),
            );
          }
          await Promise.allSettled(jobs);
          assert.deepEqual(wrong, []);
          // And after every group committed, from a fresh connection (the numbering as stored).
          const fresh = new RateCounter(open(path));
          ref.rows = dbs[0].prepare('SELECT task_id AS t, tool, at_ms AS at FROM rate_calls').all() as NaiveCounter['rows'];
          for (const task of TASKS) for (const tool of TOOLS) for (const dt of [0, 1, MINUTE_MS, HOUR_MS]) assert.deepEqual(fresh.counts(task, tool, now + dt), ref.counts(task, tool, now + dt));
        } finally {
          for (const d of dbs) d.close();
        }
      },
    ),
    { numRuns: 120 },
  );
});

test('pruning drops the rows of past days and the windows stay exact after it', () => {
  const db = open(join(tempDir(), 'rates.db'));
  const rc = new RateCounter(db);
  for (let i = 0; i < 50; i++) rc.record('T-1', i % 2 ? 'a' : 'b', T0 + i * 1000);
  // a day later: the first 10 s of rows are gone, the rest still count
  const now = T0 + DAY_MS + 10_000;
  rc.record('T-1', 'a', now);
  const left = (db.prepare('SELECT COUNT(*) AS n FROM rate_calls').get() as { n: number }).n;
  assert.equal(left, 40); // rows at T0+11s … T0+49s, and the new one
  assert.deepEqual(rc.counts('T-1', 'a', now), { calls: { minute: 1, hour: 1, day: 21 }, callsAll: { minute: 1, hour: 1, day: 40 } });
  assert.deepEqual(rc.counts('T-1', 'b', now).calls, { minute: 0, hour: 0, day: 19 });
  // everything pruned: a group starts again from nothing
  const later = now + 2 * DAY_MS;
  rc.record('T-1', 'b', later);
  assert.equal((db.prepare('SELECT COUNT(*) AS n FROM rate_calls').get() as { n: number }).n, 1);
  assert.deepEqual(rc.counts('T-1', 'b', later), { calls: { minute: 1, hour: 1, day: 1 }, callsAll: { minute: 1, hour: 1, day: 1 } });
  assert.deepEqual(rc.counts('T-1', 'a', later).calls, { minute: 0, hour: 0, day: 0 });
  db.close();
});

test('restart: the counts survive a new connection and counting continues from them', () => {
  const path = join(tempDir(), 'rates.db');
  let db = open(path);
  let rc = new RateCounter(db);
  for (let i = 0; i < 30; i++) rc.record('T-1', 'a', T0 + i * 10_000);
  const before = rc.counts('T-1', 'a', T0 + 300_000);
  db.close();
  db = open(path);
  rc = new RateCounter(db);
  assert.deepEqual(rc.counts('T-1', 'a', T0 + 300_000), before);
  rc.record('T-1', 'a', T0 + 300_000);
  assert.deepEqual(rc.counts('T-1', 'a', T0 + 300_000).calls, { minute: before.calls.minute + 1, hour: 31, day: 31 });
  db.close();
});

test('a database made before the running counts is migrated in place, counts unchanged', () => {
  const path = join(tempDir(), 'rates.db');
  let db = open(path);
  db.exec(`CREATE TABLE rate_calls (task_id TEXT NOT NULL, tool TEXT NOT NULL, at_ms INTEGER NOT NULL);
    CREATE INDEX rate_calls_task_tool_at ON rate_calls (task_id, tool, at_ms);
    CREATE INDEX rate_calls_task_at ON rate_calls (task_id, at_ms);`);
  const ins = db.prepare('INSERT INTO rate_calls (task_id, tool, at_ms) VALUES (?, ?, ?)');
  const ref = new NaiveCounter();
  // inserted out of time order on purpose
  for (const [t, tool, at] of [['T-1', 'a', 5000], ['T-1', 'b', 1000], ['T-1', 'a', 1000], ['T-2', 'a', 70_000], ['T-1', 'a', 65_000], ['T-1', 'a', 3000]] as const) {
    ins.run(t, tool, T0 + at);
    ref.rows.push({ t, tool, at: T0 + at });
  }
  db.close();
  db = open(path);
  const rc = new RateCounter(db);
  for (const now of [T0 + 60_000, T0 + 65_000, T0 + 70_000, T0 + 125_000])
    for (const t of ['T-1', 'T-2']) for (const tool of ['a', 'b']) assert.deepEqual(rc.counts(t, tool, now), ref.counts(t, tool, now), `${t} ${tool} ${now - T0}`);
  const idx = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'rate_calls'`).all() as { name: string }[]).map((r) => r.name).sort();
  assert.deepEqual(idx, ['rate_calls_at', 'rate_calls_task_n', 'rate_calls_tool_n']);
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
