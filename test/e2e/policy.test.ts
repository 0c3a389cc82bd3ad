// The Cedar policy through the real gate binary, with the support-desk server's own record as
// the witness of what reached a tool: rate limits counted per task and tool, durably across a
// gate restart; a tier rule; permit-all and deny-all (the manifest still comes first); a policy
// that does not validate stops start-up with its location; refusals never carry argument values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { arrived, call, decisions, desk, DESK_MANIFEST, ledgerOf, openDesk, rewriteContext, summary } from '../helpers/support-desk.js';

const CUSTOMER = { customer_id: 'C000042' };

const RATE_POLICY = `@id("desk")
permit (principal, action == Action::"call_tool", resource);

@id("lookup-hourly-limit")
forbid (principal, action == Action::"call_tool", resource == Tool::"lookup_customer")
when { context.calls.hour >= 3 };
`;

test('a rate limit is reached in one task and not in another, and a restarted gate keeps counting', async () => {
  const d = desk({ policy: RATE_POLICY, contexts: { t1: { task: { id: 'T-1' } }, t2: { task: { id: 'T-2' } } } });

  const g1 = await openDesk(d, 't1');
  try {
    for (let i = 0; i < 3; i++) assert.equal(summary(await call(g1, 'lookup_customer', CUSTOMER)), 'ok', `call ${i + 1}`);
    const fourth = await call(g1, 'lookup_customer', CUSTOMER);
    assert.ok(!fourth.ok);
    assert.equal(fourth.reason, 'policy_denied');
    assert.match(fourth.detail, /lookup-hourly-limit/);
    assert.equal(typeof fourth.data.entry, 'number');
    // Counted per tool: another tool of the same task is not limited.
    assert.equal(summary(await call(g1, 'list_orders', CUSTOMER)), 'ok');
  } finally {
    await g1.close();
  }
  assert.equal(arrived(d, 'lookup_customer').length, 3);

  // A new gate process on the same home, same task: the count continues from the database.
  const g2 = await openDesk(d, 't1');
  try {
    const r = await call(g2, 'lookup_customer', CUSTOMER);
    assert.equal(r.ok ? 'ok' : r.reason, 'policy_denied', 'the limit survives a restart');
    assert.match(summary(r), /lookup-hourly-limit/);
  } finally {
    await g2.close();
  }
  assert.equal(arrived(d, 'lookup_customer').length, 3);

  // Another task on the same home starts from zero.
  const g3 = await openDesk(d, 't2');
  try {
    for (let i = 0; i < 3; i++) assert.equal(summary(await call(g3, 'lookup_customer', CUSTOMER)), 'ok', `T-2 call ${i + 1}`);
    assert.equal((await call(g3, 'lookup_customer', CUSTOMER)).ok, false);
  } finally {
    await g3.close();
  }
  assert.equal(arrived(d, 'lookup_customer').length, 6);

  const lookups = decisions(d.home).filter((e) => e.tool === 'lookup_customer');
  const by = (task: string, outcome: string) => lookups.filter((e) => e.task === task && e.outcome === outcome);
  assert.equal(by('T-1', 'allow').length, 3);
  assert.equal(by('T-1', 'refuse').length, 2);
  assert.equal(by('T-2', 'allow').length, 3);
  assert.equal(by('T-2', 'refuse').length, 1);
  for (const e of lookups.filter((x) => x.outcome === 'refuse')) {
    assert.equal(e.reason, 'policy_denied');
    assert.deepEqual(e.policy_ids, ['lookup-hourly-limit']);
  }
  for (const e of lookups.filter((x) => x.outcome === 'allow')) assert.deepEqual(e.policy_ids, ['desk']);
});

const TIER_POLICY = `@id("reads")
permit (principal, action == Action::"call_tool", resource)
when { resource.effect == "read" };

// Only premium tasks may refund.
@id("refund-premium")
permit (principal, action == Action::"call_tool", resource == Tool::"issue_refund")
when { context.task.tier == "premium" };

// Said again as a forbid, so a refusal names the rule.
@id("refund-needs-premium")
forbid (principal, action == Action::"call_tool", resource == Tool::"issue_refund")
unless { context.task.tier == "premium" };
`;

test('a tier rule: a standard task is refused with the policy id, a premium task is allowed', async () => {
  const d = desk({
    policy: TIER_POLICY,
    contexts: { standard: { task: { id: 'T-10', tier: 'standard' } }, premium: { task: { id: 'T-11', tier: 'premium' } } },
  });
  const refund = (key: string) => ({ order_id: 'O100001', amount: 25, idempotency_key: key });

  const s = await openDesk(d, 'standard');
  try {
    const r = await call(s, 'issue_refund', refund('r-standard'));
    assert.ok(!r.ok);
    assert.equal(r.reason, 'policy_denied');
    assert.equal(r.detail, 'denied by refund-needs-premium');
    assert.equal(summary(await call(s, 'lookup_customer', CUSTOMER)), 'ok');
    // Cedar denies by default: a write no permit covers is refused with no rule to name.
    assert.equal(summary(await call(s, 'send_email', { to: 'ada@example.com', idempotency_key: 'e-1' })), 'policy_denied: no policy permits this call');
  } finally {
    await s.close();
  }
  assert.equal(arrived(d, 'issue_refund').length, 0);

  const p = await openDesk(d, 'premium');
  try {
    assert.equal(summary(await call(p, 'issue_refund', refund('r-premium'))), 'ok');
    assert.equal(summary(await call(p, 'send_email', { to: 'ada@example.com', idempotency_key: 'e-2' })), 'policy_denied: no policy permits this call');
  } finally {
    await p.close();
  }
  assert.deepEqual(arrived(d, 'issue_refund').map((r) => r.arguments.idempotency_key), ['r-premium']);
  const refunds = decisions(d.home).filter((e) => e.tool === 'issue_refund');
  assert.deepEqual(
    refunds.map((e) => [e.task, e.outcome, e.reason ?? null, e.policy_ids]),
    [
      ['T-10', 'refuse', 'policy_denied', ['refund-needs-premium']],
      ['T-11', 'allow', null, ['refund-premium']],
    ],
  );
});

test("the principal is the task context's task.agent at each decision: a context rewritten for another agent is decided and recorded as that agent; --agent overrides it", async () => {
  const policy = '@id("alice-only")\npermit (principal == Agent::"alice", action, resource);\n';
  const d = desk({ policy, contexts: { t: { task: { id: 'T-50', agent: 'alice' } } } });
  const s = await openDesk(d, 't');
  try {
    assert.equal(summary(await call(s, 'lookup_customer', CUSTOMER)), 'ok');
    rewriteContext(d, 't', { task: { id: 'T-50', agent: 'mallory' } });
    assert.equal(summary(await call(s, 'lookup_customer', CUSTOMER)), 'policy_denied: no policy permits this call');
    rewriteContext(d, 't', { task: { id: 'T-50' } }); // no agent named: the default principal
    assert.equal(summary(await call(s, 'lookup_customer', CUSTOMER)), 'policy_denied: no policy permits this call');
  } finally {
    await s.close();
  }
  rewriteContext(d, 't', { task: { id: 'T-50', agent: 'mallory' } });
  const fixed = await openDesk(d, 't', ['--agent', 'alice']);
  try {
    assert.equal(summary(await call(fixed, 'lookup_customer', CUSTOMER)), 'ok', '--agent is the principal whatever the task says');
  } finally {
    await fixed.close();
  }
  assert.deepEqual(
    decisions(d.home).map((e) => [e.agent, e.outcome]),
    [
      ['alice', 'allow'],
      ['mallory', 'refuse'],
      ['agent', 'refuse'],
      ['alice', 'allow'],
    ],
  );
  assert.equal(arrived(d, 'lookup_customer').length, 2);
});

test('permit-all: every declared call reaches its tool', async () => {
  const d = desk({ policy: PERMIT_ALL, contexts: { t: { task: { id: 'T-20' } } } });
  const g = await openDesk(d, 't');
  try {
    assert.equal(summary(await call(g, 'lookup_customer', CUSTOMER)), 'ok');
    assert.equal(summary(await call(g, 'list_orders', { ...CUSTOMER, limit: 5 })), 'ok');
    assert.equal(summary(await call(g, 'send_email', { to: 'ada@example.com', body: 'hello', idempotency_key: 'e-1' })), 'ok');
    assert.equal(summary(await call(g, 'issue_refund', { order_id: 'O100002', amount: 9.99, idempotency_key: 'r-1' })), 'ok');
    // The manifest still refuses what it does not declare.
    assert.equal((await call(g, 'delete_customer', CUSTOMER)).ok ? 'ok' : 'undeclared_tool', 'undeclared_tool');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrived(d).map((r) => r.tool), ['lookup_customer', 'list_orders', 'send_email', 'issue_refund']);
  const allows = decisions(d.home).filter((e) => e.outcome === 'allow');
  assert.equal(allows.length, 4);
  for (const e of allows) assert.deepEqual(e.policy_ids, ['policy0'], 'a policy without @id is named by position');
});

for (const [name, policy, detail] of [
  ['a forbid-all rule', '@id("deny-all")\nforbid (principal, action, resource);\n', 'denied by deny-all'],
  ['a policy file with no policies', '// nothing is permitted\n', 'no policy permits this call'],
] as const) {
  test(`deny-all (${name}): every declared call is policy_denied; the manifest's refusals come first`, async () => {
    const d = desk({ policy, contexts: { t: { task: { id: 'T-30' } } } });
    const g = await openDesk(d, 't');
    try {
      for (const [tool, args] of [
        ['lookup_customer', CUSTOMER],
        ['list_orders', { ...CUSTOMER, limit: 2 }],
        ['send_email', { to: 'ada@example.com', idempotency_key: 'e-1' }],
        ['issue_refund', { order_id: 'O100001', amount: 1, idempotency_key: 'r-1' }],
      ] as const) {
        assert.equal(summary(await call(g, tool, args)), `policy_denied: ${detail}`, tool);
      }
      const undeclared = await call(g, 'delete_customer', CUSTOMER);
      assert.equal(undeclared.ok ? 'ok' : undeclared.reason, 'undeclared_tool');
      const extra = await call(g, 'lookup_customer', { ...CUSTOMER, note: 'x' });
      assert.equal(extra.ok ? 'ok' : extra.reason, 'undeclared_argument');
      const invalid = await call(g, 'lookup_customer', { customer_id: 'nobody' });
      assert.equal(invalid.ok ? 'ok' : invalid.reason, 'argument_invalid');
    } finally {
      await g.close();
    }
    assert.equal(arrived(d).length, 0, 'nothing reached a tool');
    const reasons = decisions(d.home).map((e) => e.reason);
    assert.deepEqual(reasons, ['policy_denied', 'policy_denied', 'policy_denied', 'policy_denied', 'undeclared_tool', 'undeclared_argument', 'argument_invalid']);
  });
}

// Start the gate as a host would, with an upstream that leaves a marker if it is ever spawned.
function startWith(policy: string, context?: object) {
  const f = writeFiles({ 'm.yaml': DESK_MANIFEST, 'p.cedar': policy, ...(context ? { 'c.json': context } : {}) });
  const marker = join(tempDir(), 'spawned');
  const upstream = [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`];
  const r = cloakpipe(
    ['mcp-proxy', '--home', makeHome(), '--manifest', f['m.yaml'], '--policy', f['p.cedar'], ...(context ? ['--context', f['c.json']] : []), '--', ...upstream],
    { input: '', timeout: 60_000 },
  );
  return { ...r, spawned: existsSync(marker), policyPath: f['p.cedar'] };
}

const HEAD = '@id("desk")\npermit (principal, action == Action::"call_tool", resource);\n';

for (const [name, body, context, where, message] of [
  ['an unknown Tool attribute', '@id("typo")\nforbid (principal, action, resource)\nwhen { resource.effct == "write" };\n', undefined, ':5:8:', /effct/],
  ['an unknown tool', '@id("ghost")\nforbid (principal, action, resource == Tool::"refund_everything");\n', undefined, ':4:40:', /unknown tool `Tool::"refund_everything"`/],
  ['a task attribute the task context does not have', '@id("tier")\nforbid (principal, action, resource)\nunless { context.task.tier == "premium" };\n', { task: { id: 'T-1', level: 'gold' } }, ':5:10:', /task\.tier/],
  ['a misspelt call window', '@id("rate")\nforbid (principal, action, resource)\nwhen { context.calls.hr >= 5 };\n', undefined, ':5:8:', /hr/],
] as const) {
  test(`start-up refuses a policy with ${name}, with its file:line:col, before spawning the upstream`, () => {
    const r = startWith(HEAD + body, context);
    assert.equal(r.status, 2, r.stderr);
    assert.ok(r.stderr.includes(r.policyPath + where), `expected ${r.policyPath}${where} in:\n${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.spawned, false, 'the upstream must not be spawned');
    assert.equal(r.stdout, '');
  });
}

test('policy_denied and fail_closed refusals never carry argument values (canaries in the arguments)', async () => {
  const CANARY = 'canary-policy-5f1e';
  const BIG = 9223372036859; // a safe integer whose product with 10^6 overflows Cedar's Long
  const d = desk({
    policy: `${HEAD}
@id("no-refund-talk")
forbid (principal, action == Action::"call_tool", resource == Tool::"send_email")
when { context.args has body && context.args.body like "*refund*" };

// Cedar's error message for this overflow quotes the value; the refusal must not.
@id("page-cost")
forbid (principal, action == Action::"call_tool", resource == Tool::"list_orders")
when { context.args has limit && context.args.limit * 1000000 > 500000000 };

// An amount Cedar cannot hold is left out of context.args: written with has, the cap applies.
@id("refund-cap")
forbid (principal, action == Action::"call_tool", resource == Tool::"issue_refund")
unless { context.args has amount && context.args.amount.lessThan(decimal("100.0")) };
`,
    contexts: { t: { task: { id: 'T-40' } } },
  });
  const g = await openDesk(d, 't');
  const outcomes = [];
  try {
    const denied = await call(g, 'send_email', { to: `${CANARY}@example.com`, subject: CANARY, body: `please refund ${CANARY}`, idempotency_key: `k-${CANARY}` });
    assert.equal(summary(denied), 'policy_denied: denied by no-refund-talk');
    outcomes.push(denied);
    const overflow = await call(g, 'list_orders', { ...CUSTOMER, limit: BIG });
    assert.ok(!overflow.ok);
    assert.equal(overflow.reason, 'fail_closed');
    assert.match(overflow.detail, /policy evaluation error in "page-cost"/);
    outcomes.push(overflow);
    // More places than Cedar holds; the digits after the point are the canary, long enough that
    // no hex digest, pid or time in the output holds them by chance (five digits did, once).
    const decimals = await call(g, 'issue_refund', { order_id: 'O100001', amount: 12.345678901, idempotency_key: `r-${CANARY}` });
    assert.equal(summary(decimals), 'policy_denied: denied by refund-cap');
    outcomes.push(decimals);
    assert.equal(summary(await call(g, 'list_orders', { ...CUSTOMER, limit: 100 })), 'ok', 'the same rule decides when it can');
  } finally {
    await g.close();
  }
  const seen = JSON.stringify(outcomes) + JSON.stringify(ledgerOf(d.home)) + g.stderr();
  for (const v of [CANARY, String(BIG), '345678901']) assert.ok(!seen.includes(v), `${v} leaked`);
  assert.deepEqual(arrived(d).map((r) => r.tool), ['list_orders']);
  const refused = decisions(d.home).filter((e) => e.outcome === 'refuse');
  assert.deepEqual(refused.map((e) => [e.reason, e.policy_ids]), [
    ['policy_denied', ['no-refund-talk']],
    ['fail_closed', ['page-cost']],
    ['policy_denied', ['refund-cap']],
  ]);
  assert.deepEqual(refused.map((e) => e.policy_omitted ?? null), [null, null, ['amount']]);
});
