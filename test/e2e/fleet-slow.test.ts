// A fleet's database slow past the bound (fleet.md; ADR 016, ADR 060), through the real binary
// and the official SDK client: a gate on `--store postgres://…?timeout=1s` whose transactions
// wait for a lock another connection holds, or whose database stops answering (its processes
// SIGSTOPped), refuses every call fail_closed while that lasts (without the bound the call would
// wait for it; how long the refusal took is a diagnostic, not asserted), forwards nothing (the upstream's record), applies
// nothing of the refused decision (the same operation id runs once the database answers, not
// reconcile_before_retry), and goes on when the lock is released or the processes continued, the
// same gate process, no restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { arrived, call, desk, openDesk, summary, type Outcome } from '../helpers/support-desk.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, PG_SCRIPT, sql } from '../helpers/fleet.js';

const BOUND_MS = 1000;

const ALLOW_ALL = `@id("desk")
permit (principal, action == Action::"call_tool", resource);
`;

async function timed(p: Promise<Outcome>): Promise<{ o: Outcome; ms: number }> {
  const t0 = Date.now();
  const o = await p;
  return { o, ms: Date.now() - t0 };
}

const withBound = (url: string) => `${url}${url.includes('?') ? '&' : '?'}timeout=${BOUND_MS}ms`;

test('fleet: a lock another connection holds past the bound → every call fail_closed within it, nothing forwarded or applied; released, the same gate goes on', { ...pgSkip, timeout: 180_000 }, async (t) => {
  const url = await freshDatabase();
  const d = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-slow' } } } });
  const home = initGate(url, 'gate-slow');
  const g = await openDesk({ ...d, home }, 't', ['--store', withBound(url)]);
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  const write = { to: 'ada@example.com', body: 'your refund', idempotency_key: 'while-slow' };
  try {
    assert.equal((await call(g, 'lookup_customer', { customer_id: 'C000001' })).ok, true);
    // Its result entry commits after the answer (ADR 017): counted once it is there, or a loaded
    // machine counts before it and then sees it land as if a refused decision had written it.
    const results = async () => (await sql(url, `SELECT count(*)::int AS n FROM cloakpipe.entries WHERE kind = 'result'`))[0].n as number;
    for (const deadline = Date.now() + 10_000; (await results()) < 1; await new Promise((r) => setTimeout(r, 20)))
      assert.ok(Date.now() < deadline, "the first call's result entry was never stored");
    const entriesBefore = (await sql(url, 'SELECT count(*)::int AS n FROM cloakpipe.entries'))[0].n as number;
    // Reads pass; every INSERT into the chain waits: a decision is written up to its entry, then stops.
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE cloakpipe.entries IN EXCLUSIVE MODE');
    const slow = await timed(call(g, 'send_email', write, undefined, 60_000));
    assert.equal(summary(slow.o).split(':')[0], 'fail_closed', summary(slow.o));
    const read = await timed(call(g, 'lookup_customer', { customer_id: 'C000002' }, undefined, 60_000));
    assert.equal(summary(read.o).split(':')[0], 'fail_closed', summary(read.o));
    t.diagnostic(`refused after ${slow.ms} and ${read.ms} ms (bound ${BOUND_MS} ms)`);
    // Seen under the lock: nothing of the refused decisions (no pending operation, no entry).
    assert.deepEqual((await locker.query(`SELECT id FROM cloakpipe.operations`)).rows, []);
    assert.equal((await locker.query('SELECT count(*)::int AS n FROM cloakpipe.entries')).rows[0].n, entriesBefore);
    assert.deepEqual(arrived(d).map((r) => r.arguments.customer_id ?? r.arguments.idempotency_key), ['C000001'], 'nothing forwarded while slow');
    await locker.query('COMMIT');
    // The same operation id: it never began, so it runs now, once.
    const back = await call(g, 'send_email', write, undefined, 60_000);
    assert.equal(back.ok, true, summary(back));
    assert.equal((await call(g, 'lookup_customer', { customer_id: 'C000003' }, undefined, 60_000)).ok, true);
    assert.match(g.stderr(), /store unavailable: .*; every call is refused fail_closed/);
    assert.ok(!g.stderr().includes('ada@example.com') && !g.stderr().includes('your refund'), 'no argument value on stderr');
  } finally {
    await locker.end().catch(() => undefined);
    await g.close();
  }
  assert.deepEqual(arrived(d).map((r) => r.arguments.customer_id ?? r.arguments.idempotency_key), ['C000001', 'while-slow', 'C000003']);
  const ops = await sql(url, 'SELECT id, state FROM cloakpipe.operations');
  assert.deepEqual(ops, [{ id: 'while-slow', state: 'succeeded' }]);
  const v = cloakpipe(['verify', '--store', url]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});

/** Every process of a cluster of the test's own: the postmaster and its children. */
function clusterPids(dir: string): number[] {
  const main = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(main)], { encoding: 'utf8' })
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
  return [main, ...children];
}

test('fleet: the database stops answering (SIGSTOP) → calls fail_closed within the bound, nothing forwarded or applied; continued, the same gate goes on', { ...pgSkip, timeout: 180_000 }, async (t) => {
  // Its own cluster, so stopping it disturbs no other test.
  const dir = tempDir('cloakpipe-fleet-slow-pg-');
  const base = execFileSync('bash', [PG_SCRIPT, 'start', dir], { encoding: 'utf8' }).trim();
  let stopped: number[] = [];
  const cont = () => {
    for (const pid of stopped.reverse()) process.kill(pid, 'SIGCONT');
    stopped = [];
  };
  try {
    const url = await freshDatabase(base);
    const d = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-stopped' } } } });
    const home = initGate(url, 'gate-stopped');
    const g = await openDesk({ ...d, home }, 't', ['--store', withBound(url)]);
    const write = { to: 'ada@example.com', idempotency_key: 'while-stopped' };
    try {
      assert.equal((await call(g, 'lookup_customer', { customer_id: 'C000001' })).ok, true);
      // The postmaster first (it spawns no one new), then every backend: the gate's included.
      for (const pid of clusterPids(dir)) {
        process.kill(pid, 'SIGSTOP');
        stopped.push(pid);
      }
      const slow = await timed(call(g, 'send_email', write, undefined, 60_000));
      assert.equal(summary(slow.o).split(':')[0], 'fail_closed', summary(slow.o));
      const read = await timed(call(g, 'lookup_customer', { customer_id: 'C000002' }, undefined, 60_000));
      assert.equal(summary(read.o).split(':')[0], 'fail_closed', summary(read.o));
      t.diagnostic(`refused after ${slow.ms} and ${read.ms} ms (bound ${BOUND_MS} ms)`);
      assert.deepEqual(arrived(d).map((r) => r.arguments.customer_id ?? r.arguments.idempotency_key), ['C000001'], 'nothing forwarded while stopped');
      cont();
      // What the stopped server held from the refused transactions ends with their connections.
      await new Promise((r) => setTimeout(r, 500));
      assert.deepEqual(await sql(url, 'SELECT id FROM cloakpipe.operations'), [], 'nothing of the refused decision');
      const back = await call(g, 'send_email', write, undefined, 60_000);
      assert.equal(back.ok, true, summary(back));
      assert.match(g.stderr(), /store unavailable: .*; every call is refused fail_closed/);
    } finally {
      cont();
      await g.close();
    }
    assert.deepEqual(arrived(d).map((r) => r.arguments.customer_id ?? r.arguments.idempotency_key), ['C000001', 'while-stopped']);
    const v = cloakpipe(['verify', '--store', url]);
    assert.equal(v.status, 0, v.stdout + v.stderr);
  } finally {
    cont();
    execFileSync('bash', [PG_SCRIPT, 'stop', dir]);
  }
});
