// The task context file rewritten while a gate runs. The gate re-reads it and, before using it,
// validates the policy against the new task's shape: a shape the policy was not written for
// (an attribute it reads gone, or of another type) fails every call closed, naming the
// policies, until the file has a shape the policy validates against again. A value of the
// right shape that Cedar cannot evaluate fails the call closed too. Nothing reaches a tool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arrived, call, decisions, desk, openDesk, rewriteContext, summary } from '../helpers/support-desk.js';

const POLICY = `@id("reads")
permit (principal, action == Action::"call_tool", resource)
when { resource.effect == "read" };

@id("refunds-premium")
permit (principal, action == Action::"call_tool", resource == Tool::"issue_refund")
when { context.task.tier == "premium" };

// A refund above the task's cap is refused.
@id("refund-cap")
forbid (principal, action == Action::"call_tool", resource == Tool::"issue_refund")
unless { context.args has amount && context.args.amount.lessThanOrEqual(context.task.refund_cap) };
`;

const CUSTOMER = { customer_id: 'C000042' };
let keys = 0;
const refund = (amount: number) => ({ order_id: 'O100001', amount, idempotency_key: `r-${++keys}` });

test('a task context rewritten mid-session: unevaluable values and shape drift fail closed; a good shape recovers', async () => {
  const start = { task: { id: 'T-5', tier: 'premium', refund_cap: 100.5 } };
  const d = desk({ policy: POLICY, contexts: { c: start } });
  const g = await openDesk(d, 'c');
  const forwardedBefore = () => arrived(d).length;
  try {
    assert.equal(summary(await call(g, 'lookup_customer', CUSTOMER)), 'ok');
    assert.equal(summary(await call(g, 'issue_refund', refund(50))), 'ok');
    assert.equal(summary(await call(g, 'issue_refund', refund(200))), 'policy_denied: denied by refund-cap');
    const n = forwardedBefore();
    assert.equal(n, 2);

    // Same shape, a value Cedar cannot hold (a decimal has four fractional digits): the
    // evaluation fails, and so does the call, the read included (the task is context for all).
    rewriteContext(d, 'c', { task: { ...start.task, refund_cap: 100.12345 } });
    for (const [tool, args] of [['issue_refund', refund(20)], ['lookup_customer', CUSTOMER]] as const) {
      const r = await call(g, tool, args);
      assert.ok(!r.ok, tool);
      assert.equal(r.reason, 'fail_closed');
      assert.match(r.detail, /task\.refund_cap: number has more than 4 decimal places/);
      assert.ok(!r.detail.includes('12345'), 'the detail names the path, not the value');
    }

    // Drift: an attribute a policy reads is gone.
    rewriteContext(d, 'c', { task: { id: 'T-5', refund_cap: 100.5 } });
    const gone = await call(g, 'lookup_customer', CUSTOMER);
    assert.ok(!gone.ok);
    assert.equal(gone.reason, 'fail_closed');
    assert.match(gone.detail, /task context changed shape/);
    assert.match(gone.detail, /"refunds-premium"/);
    assert.ok(!/refund-cap|"reads"/.test(gone.detail), 'only the policies that no longer validate are named');
    assert.match(g.stderr(), /no longer validate against its shape/);
    assert.match(g.stderr(), /policy\.cedar:7:\d+: .*task\.tier/, 'the operator log has Cedar\'s message and location');

    // Drift: an attribute changes type (the cap as an integer is a Long, not a decimal).
    rewriteContext(d, 'c', { task: { id: 'T-5', tier: 'premium', refund_cap: 100 } });
    const retyped = await call(g, 'issue_refund', refund(20));
    assert.ok(!retyped.ok);
    assert.equal(retyped.reason, 'fail_closed');
    assert.match(retyped.detail, /"refund-cap"/);

    // Drift: the tier as a number would compare unequal to "premium" without any error.
    rewriteContext(d, 'c', { task: { id: 'T-5', tier: 2, refund_cap: 100.5 } });
    const tier = await call(g, 'lookup_customer', CUSTOMER);
    assert.equal(tier.ok ? 'ok' : tier.reason, 'fail_closed');
    assert.match(summary(tier), /"refunds-premium"/);
    assert.equal(arrived(d).length, n, 'nothing was forwarded while the context did not fit the policy');

    // A shape the policy validates against again, with new facts (a new attribute no policy
    // reads, a standard tier): calls are decided by the policy with the new task's values.
    rewriteContext(d, 'c', { task: { id: 'T-5', tier: 'standard', refund_cap: 10.25, note: 'escalated' } });
    assert.equal(summary(await call(g, 'lookup_customer', CUSTOMER)), 'ok');
    assert.equal(summary(await call(g, 'issue_refund', refund(5))), 'policy_denied: no policy permits this call');
    rewriteContext(d, 'c', { task: { id: 'T-5', tier: 'premium', refund_cap: 10.25, note: 7 } });
    assert.equal(summary(await call(g, 'issue_refund', refund(5))), 'ok', 'an attribute no policy reads may change type');
    assert.equal(summary(await call(g, 'issue_refund', refund(11))), 'policy_denied: denied by refund-cap');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrived(d).map((r) => r.tool), ['lookup_customer', 'issue_refund', 'lookup_customer', 'issue_refund']);

  const failed = decisions(d.home).filter((e) => e.reason === 'fail_closed');
  assert.equal(failed.length, 5);
  assert.deepEqual(failed.map((e) => e.policy_ids), [[], [], ['refunds-premium'], ['refund-cap'], ['refunds-premium']]);
  // Each decision records the digest of the context it used: seven versions of the file.
  assert.equal(new Set(decisions(d.home).map((e) => e.context_digest)).size, 7);
});
