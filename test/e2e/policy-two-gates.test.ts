// Two gate processes on one home, one task, a rate limit of N: called concurrently, exactly N
// calls are allowed in total. Each gate counts, evaluates and records inside one IMMEDIATE
// transaction per batch (store/group-commit.ts), so the second gate's count sees the first
// gate's allowed calls; a limit cannot be doubled by running two gates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arrived, call, decisions, desk, openDesk, type Outcome } from '../helpers/support-desk.js';

const LIMIT = 5;
const POLICY = `@id("desk")
permit (principal, action == Action::"call_tool", resource);

@id("lookup-daily-limit")
forbid (principal, action == Action::"call_tool", resource == Tool::"lookup_customer")
when { context.calls.day >= ${LIMIT} };
`;

test(`two gates on one home, many concurrent calls, a limit of ${LIMIT}: exactly ${LIMIT} are allowed in total`, async (t) => {
  const d = desk({ policy: POLICY, contexts: { t: { task: { id: 'T-60' } } } });
  const [a, b] = await Promise.all([openDesk(d, 't'), openDesk(d, 't')]);
  let results: Outcome[];
  try {
    results = await Promise.all(
      Array.from({ length: 24 }, (_, i) => call(i % 2 ? a : b, 'lookup_customer', { customer_id: `C0000${String(i).padStart(2, '0')}` }, undefined, 120_000)),
    );
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
  const ok = results.filter((r) => r.ok);
  assert.equal(ok.length, LIMIT, results.map((r) => (r.ok ? 'ok' : `${r.reason}: ${r.detail}`)).join('\n'));
  for (const r of results) if (!r.ok) assert.equal(`${r.reason}: ${r.detail}`, 'policy_denied: denied by lookup-daily-limit');
  assert.equal(arrived(d, 'lookup_customer').length, LIMIT, 'the upstreams of both gates ran the tool N times together');
  // Which gate got the allowed calls is up to the scheduler; say so for the record.
  t.diagnostic(`allowed calls ran in ${new Set(arrived(d).map((r) => r.pid)).size} upstream process(es)`);

  const lookups = decisions(d.home).filter((e) => e.tool === 'lookup_customer');
  assert.equal(lookups.length, 24);
  assert.equal(lookups.filter((e) => e.outcome === 'allow').length, LIMIT);
});
