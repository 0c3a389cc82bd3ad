// Operations across a fleet (fleet.md's table): a write that succeeded on one gate is replayed,
// its stored result and nothing forwarded, by every other gate; the same operation id with
// another call is `operation_conflict` on every gate, and that call never runs. Three gate
// processes on one PostgreSQL database; the support-desk upstream counts what ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arrived, call, desk, openDesk, summary } from '../helpers/support-desk.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';
import { cloakpipe } from '../helpers/cli.js';

const ALLOW_ALL = `@id("desk")
permit (principal, action == Action::"call_tool", resource);
`;

test('one operation id on three gates: replayed by the others when it is the same call, operation_conflict on each when it is not', pgSkip, async () => {
  const url = await freshDatabase();
  const d = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-fleet-ops' } } } });
  const gates = await Promise.all(['a', 'b', 'c'].map((n) => openDesk({ ...d, home: initGate(url, `gate-${n}`) }, 't', ['--store', url])));
  const args = { to: 'ada@example.com', body: 'your refund', idempotency_key: 'op-refund-7' };
  const other = { ...args, body: 'a different message' };
  try {
    const first = await call(gates[0], 'send_email', args, undefined, 60_000);
    assert.ok(first.ok, summary(first));
    for (const g of gates) {
      const again = await call(g, 'send_email', args, undefined, 60_000);
      assert.ok(again.ok, summary(again));
      assert.deepEqual(again, first, 'the stored result, on every gate');
      const conflict = await call(g, 'send_email', other, undefined, 60_000);
      assert.match(summary(conflict), /^operation_conflict:/);
    }
  } finally {
    await Promise.all(gates.map((g) => g.close()));
  }
  assert.equal(arrived(d, 'send_email').length, 1, 'the write ran once, the other call never');
  const ops = await sql(url, `SELECT state, attempts FROM cloakpipe.operations WHERE id = 'op-refund-7'`);
  assert.deepEqual(ops, [{ state: 'succeeded', attempts: 1 }]);
  const v = cloakpipe(['verify', '--store', url]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
