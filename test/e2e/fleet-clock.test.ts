// Gates whose clocks disagree, on one PostgreSQL database (fleet.md: a limit of N is never
// exceeded fleet-wide; ADR 060): the real binary, three gates, one 30 minutes ahead and one 30
// minutes behind (their Date.now shifted by a preload), a Cedar limit per minute, concurrent
// calls on every gate. Rate windows count by the database's clock, so exactly the limit reaches
// the upstream; counted by each gate's own clock, the gate ahead would see the others' calls as
// half an hour old and allow its own on top. Approval requests waiting for a person are not
// deleted as expired by a gate whose clock runs ahead of the database's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { helperScript } from '../helpers/cli.js';
import { arrived, call, desk, summary, type Outcome } from '../helpers/support-desk.js';
import { call as gateCall, recordingUpstream, startGate } from '../helpers/gate.js';
import { setup } from '../helpers/recording-gate.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

const SKEW = [0, 30 * 60_000, -30 * 60_000];

test('a Cedar limit of 20 per minute across three gates with clocks 30 minutes apart: exactly 20 allowed', { ...pgSkip, timeout: 300_000 }, async () => {
  const LIMIT = 20;
  const PER_GATE = 20;
  const url = await freshDatabase();
  const d = desk({
    policy: `@id("desk")
permit (principal, action == Action::"call_tool", resource);
@id("lookup-limit")
forbid (principal, action == Action::"call_tool", resource == Tool::"lookup_customer")
when { context.calls.minute >= ${LIMIT} };
`,
    contexts: { t: { task: { id: 'T-skew' } } },
  });
  const gates = await Promise.all(
    SKEW.map((skew, i) => {
      const upstream = recordingUpstream('desk', d.record);
      return startGate({
        ...d,
        home: initGate(url, `gate-${i}`),
        context: d.contexts.t,
        flags: ['--store', url],
        upstream: upstream.upstream,
        node: ['--import', pathToFileURL(helperScript('clock-skew-preload.js')).href],
        env: { ...upstream.env, CLOAKPIPE_TEST_CLOCK_SKEW_MS: String(skew) },
      });
    }),
  );
  let results: Outcome[];
  try {
    // The gate behind goes first; on their own clocks the others would find its calls half an
    // hour (or an hour) old, outside their minute, and allow their own on top.
    const first = await Promise.all(Array.from({ length: PER_GATE }, (_, i) => call(gates[2], 'lookup_customer', { customer_id: `C${String(i).padStart(6, '0')}` }, undefined, 60_000)));
    const rest = await Promise.all(
      Array.from({ length: 2 * PER_GATE }, (_, i) => call(gates[i % 2], 'lookup_customer', { customer_id: `C${String(100 + i).padStart(6, '0')}` }, undefined, 60_000)),
    );
    results = [...first, ...rest];
  } finally {
    await Promise.all(gates.map((g) => g.close()));
  }
  assert.equal(results.filter((r) => r.ok).length, LIMIT, results.map(summary).join('\n'));
  for (const r of results) if (!r.ok) assert.equal(summary(r), 'policy_denied: denied by lookup-limit');
  assert.equal(arrived(d, 'lookup_customer').length, LIMIT);
});

test("a gate whose clock runs two hours ahead leaves the fleet's waiting approval requests alone (their hour is not over)", { ...pgSkip, timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  const s = setup();
  const gates = await Promise.all(
    [0, 2 * 60 * 60_000].map((skew, i) => {
      const upstream = recordingUpstream('approvals', s.record);
      return startGate({
        ...s,
        home: initGate(url, `gate-${i}`),
        flags: ['--approver-key', s.approverPub, '--store', url],
        upstream: upstream.upstream,
        node: ['--import', pathToFileURL(helperScript('clock-skew-preload.js')).href],
        env: { ...upstream.env, CLOAKPIPE_TEST_CLOCK_SKEW_MS: String(skew) },
      });
    }),
  );
  try {
    // A call waits for a person (an hour, the default), recorded by the gate on time ...
    const waiting = await gateCall(gates[0], 'send_email', { to: 'ada@example.com', body: 'refund 1' }, undefined, 60_000);
    assert.equal(!waiting.ok && waiting.reason, 'approval_required', JSON.stringify(waiting));
    // ... then the gate ahead records one too, and trims what it takes for expired.
    const other = await gateCall(gates[1], 'send_email', { to: 'bob@example.com', body: 'refund 2' }, undefined, 60_000);
    assert.equal(!other.ok && other.reason, 'approval_required', JSON.stringify(other));
  } finally {
    await Promise.all(gates.map((g) => g.close()));
  }
  const requests = await sql(url, 'SELECT gate FROM cloakpipe.approval_requests ORDER BY gate');
  assert.deepEqual(requests.map((r) => r.gate), ['gate-0', 'gate-1'], 'both requests still wait for a person');
});
