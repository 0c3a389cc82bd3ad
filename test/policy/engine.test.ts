// The Cedar engine with real Cedar: sanity, the example policy's rules, start-up refusals with
// their location, fail-closed evaluation, and policy ids on a deny.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadPolicy, loadPolicyFile, PolicyEvalError, PolicyLoadError } from '../../src/policy/engine.js';
import { digestBytes } from '../../src/core/digest.js';
import { EXAMPLE, SMALL, ZERO, exampleManifest, exampleTask, request } from './fixtures.js';

function loadError(fn: () => unknown): PolicyLoadError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof PolicyLoadError, `expected PolicyLoadError, got ${e}`);
    return e;
  }
  assert.fail('expected the policy to be refused');
}

test('permit-all allows every declared tool', () => {
  const e = loadPolicy(SMALL, 'permit(principal, action, resource);');
  for (const tool of ['read_doc', 'send']) {
    const d = e.evaluate(request({ tool }));
    assert.equal(d.allow, true);
    assert.deepEqual(d.policyIds, ['policy0']);
  }
});

test('deny-all: an empty policy and a forbid-all both deny', () => {
  const empty = loadPolicy(SMALL, '// nothing permitted\n');
  assert.deepEqual(empty.evaluate(request()), { allow: false, policyIds: [], omitted: [] });
  const forbid = loadPolicy(SMALL, '@id("nothing") forbid(principal, action, resource);\n@id("all") permit(principal, action, resource);');
  assert.deepEqual(forbid.evaluate(request()), { allow: false, policyIds: ['nothing'], omitted: [] });
});

test('policy ids come from @id, else policyN by position; duplicates refuse loading', () => {
  const e = loadPolicy(SMALL, 'permit(principal, action, resource == Tool::"read_doc");\n@id("sends") permit(principal, action, resource == Tool::"send");');
  assert.deepEqual(e.policies.map((p) => p.id), ['policy0', 'sends']);
  assert.deepEqual(e.evaluate(request({ tool: 'send' })).policyIds, ['sends']);
  const err = loadError(() => loadPolicy(SMALL, '@id("a") permit(principal, action, resource);\n@id("a") forbid(principal, action, resource);'));
  assert.match(err.message, /duplicate policy id "a"/);
  assert.match(err.message, /:2:1:/);
  assert.match(loadError(() => loadPolicy(SMALL, '@id("") permit(principal, action, resource);')).message, /@id needs a non-empty value/);
});

test('digest is sha256 of the policy file bytes', () => {
  const e = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  assert.equal(e.digest, digestBytes(readFileSync(EXAMPLE.policy)));
});

test('the tool entity carries manifest attributes with defaults', () => {
  const e = loadPolicy(
    SMALL,
    `@id("shape") permit(principal, action, resource) when {
       resource.approval == "none" && resource.accepts == "public" && resource.returns == "confidential" && resource.effect == "read" };
     @id("send") permit(principal, action, resource) when {
       resource.approval == "required" && resource.accepts == "internal" && resource.returns == "public" && resource.effect == "write" };`,
  );
  assert.deepEqual(e.evaluate(request({ tool: 'read_doc' })).policyIds, ['shape']);
  assert.deepEqual(e.evaluate(request({ tool: 'send' })).policyIds, ['send']);
});

test("a policy may read another tool's attributes", () => {
  const e = loadPolicy(SMALL, '@id("x") permit(principal, action, resource == Tool::"send") when { Tool::"read_doc".returns == "confidential" };');
  assert.deepEqual(e.evaluate(request({ tool: 'send' })).policyIds, ['x']);
});

test('session label and principal reach Cedar', () => {
  const e = loadPolicy(SMALL, 'permit(principal == Agent::"bot", action == Action::"call_tool", resource) when { context.session.label == "internal" };');
  assert.equal(e.evaluate(request({ agent: 'bot', sessionLabel: 'internal' })).allow, true);
  assert.equal(e.evaluate(request({ agent: 'bot', sessionLabel: 'public' })).allow, false);
  assert.equal(e.evaluate(request({ agent: 'other', sessionLabel: 'internal' })).allow, false);
});

test('example: the tier rule unlocks refunds for premium tasks only', () => {
  const e = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  const refund = { order_id: 'O100001', amount: 20 };
  const premium = e.evaluate(request({ tool: 'issue_refund', args: refund, task: exampleTask() }));
  assert.deepEqual(premium, { allow: true, policyIds: ['refund-premium-tier'], omitted: [] });
  const standard = e.evaluate(request({ tool: 'issue_refund', args: refund, task: { ...exampleTask(), tier: 'standard' } }));
  assert.deepEqual(standard, { allow: false, policyIds: [], omitted: [] });
});

test("example: a refund is bound to the task's order ids, and the deny names the rule", () => {
  const e = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  const d = e.evaluate(request({ tool: 'issue_refund', args: { order_id: 'O999999', amount: 20 }, task: exampleTask() }));
  assert.deepEqual(d, { allow: false, policyIds: ['refund-task-orders'], omitted: [] });
  // A task with no order ids refunds nothing (the rule tests `has`, so it cannot error).
  const { order_ids: _dropped, ...noOrders } = exampleTask();
  const d2 = e.evaluate(request({ tool: 'issue_refund', args: { order_id: 'O100001', amount: 20 }, task: noOrders }));
  assert.deepEqual(d2.policyIds, ['refund-task-orders']);
  assert.equal(d2.allow, false);
});

test('example: the email limit forbids at 5 calls within the hour', () => {
  const e = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  const email = (hour: number) => e.evaluate(request({ tool: 'send_email', args: { to: 'ada@example.com' }, task: exampleTask(), calls: { minute: 0, hour, day: hour } }));
  assert.equal(email(4).allow, true);
  assert.deepEqual(email(5), { allow: false, policyIds: ['email-hourly-limit'], omitted: [] });
  // reads are not limited by it
  assert.equal(e.evaluate(request({ tool: 'lookup_customer', args: { customer_id: 'C000001' }, task: exampleTask(), calls: { minute: 9, hour: 99, day: 999 } })).allow, true);
});

test('an unknown Tool attribute refuses loading with Cedar message and location', () => {
  const text = '@id("ok") permit(principal, action, resource);\n\n@id("typo")\nforbid(principal, action, resource)\n  when { resource.effct == "write" };\n';
  const err = loadError(() => loadPolicy(SMALL, text, { source: 'rules.cedar' }));
  assert.equal(err.problems.length, 1);
  const p = err.problems[0];
  assert.equal(p.policyId, 'typo');
  assert.match(p.message, /attribute `effct` on entity type `Tool` not found/); // Cedar's own words
  assert.deepEqual([p.line, p.column], [5, 10]);
  assert.match(err.message, /^rules\.cedar:5:10: /);
  assert.match(p.excerpt!, /\^{14}/);
});

test('unknown attributes of context.calls, session, task and args refuse loading', () => {
  const cases = [
    'context.calls.hr >= 5',
    'context.calls_all.week >= 5',
    'context.session.lable == "public"',
    'context.task.tier == "x"', // no task context: task has no attributes
    'context.args has recipient',
  ];
  for (const cond of cases) {
    const err = loadError(() => loadPolicy(SMALL, `forbid(principal, action, resource) when { ${cond} };`));
    assert.match(err.message, /policy:1:\d+: /, cond);
  }
  // an argument must be tested with `has` first: Cedar's validator insists
  const err = loadError(() => loadPolicy(SMALL, 'forbid(principal, action, resource) when { context.args.to == "x" };'));
  assert.match(err.message, /optional attribute `args\.to`/);
  // with the task given, its attributes are known
  const e = loadPolicy(SMALL, 'forbid(principal, action, resource) when { context.task.tier == "x" };', { task: { tier: 'standard' } });
  assert.equal(e.policies.length, 1);
});

test('an unknown tool literal refuses loading with its location', () => {
  const text = '@id("good") permit(principal, action, resource == Tool::"send");\n@id("bad")\npermit(principal, action, resource)\n  when { [Tool::"read_doc", Tool::"delete_all"].contains(resource) };';
  const err = loadError(() => loadPolicy(SMALL, text, { source: 'p.cedar' }));
  assert.equal(err.problems.length, 1);
  const p = err.problems[0];
  assert.equal(p.policyId, 'bad');
  assert.match(p.message, /unknown tool `Tool::"delete_all"`/);
  assert.deepEqual([p.line, p.column], [4, 29]);
  // in the scope too
  const scoped = loadError(() => loadPolicy(SMALL, '\n\n  forbid(principal, action, resource == Tool::"sned");'));
  assert.deepEqual([scoped.problems[0].line, scoped.problems[0].column], [3, 41]);
});

test('a policy that can never apply refuses loading (a typo in a `has` test)', () => {
  const err = loadError(() => loadPolicy(SMALL, '@id("guard")\nforbid(principal, action, resource)\n  when { context.args has recipent && context.calls.hour > 3 };'));
  assert.match(err.message, /policy:1:1: for policy `guard`, policy is impossible/);
});

test('bidirectional controls refuse loading, even in a comment; so do mixed scripts', () => {
  const c = loadError(() => loadPolicy(SMALL, 'permit(principal, action, resource);\n// admin only \u202e };\n'));
  assert.match(c.message, /^policy:2:15: bidirectional control character U\+202E/);
  const s = loadError(() => loadPolicy(SMALL, 'permit(principal, action, resource) when { context.args has to && context.args.to == "ok\u2067" };'));
  assert.match(s.message, /bidirectional/);
  assert.match(loadError(() => loadPolicy(SMALL, '\npermit(principal == Agent::"\u0430dmin", action, resource);')).message, /^policy:2:1: .*mixed scripts/);
});

test('an unknown action or entity type refuses loading', () => {
  assert.match(loadError(() => loadPolicy(SMALL, 'permit(principal, action == Action::"call", resource);')).message, /unrecognized action/);
  assert.match(loadError(() => loadPolicy(SMALL, 'permit(principal == User::"x", action, resource);')).message, /policy:1:\d+:/);
});

test('a parse error refuses loading with its location in the file', () => {
  const err = loadError(() => loadPolicy(SMALL, '// header\npermit(principal, action, resource);\nforbid(principal, action, resource) when { context.x = 1 };', { source: 'f.cedar' }));
  assert.match(err.message, /^f\.cedar:3:\d+: .*'=' is not a valid operator/);
});

test('locations count characters after non-ASCII text', () => {
  const err = loadError(() => loadPolicy(SMALL, '// règle: café ☕\n@id("é") forbid(principal, action, resource) when { resource.effct == "é" };'));
  assert.deepEqual([err.problems[0].line, err.problems[0].column], [2, 53]);
});

test('an evaluation error throws (fail_closed) even when a permit matched', () => {
  // Valid against the schema, but errors at run time when the task lacks the attribute: Cedar
  // would skip the erroring forbid and allow. The engine must not.
  const e = loadPolicy(
    SMALL,
    '@id("all") permit(principal, action, resource);\n@id("vip-only") forbid(principal, action, resource) when { context.task.tier != "vip" };',
    { task: { tier: 'vip' } },
  );
  assert.equal(e.evaluate(request({ task: { tier: 'vip' } })).allow, true);
  assert.throws(
    () => e.evaluate(request({ task: { id: 'T-1' } })),
    (err: unknown) => err instanceof PolicyEvalError && err.policyIds.includes('vip-only') && /vip-only/.test(err.message),
  );
  // overflow is an evaluation error too
  const o = loadPolicy(SMALL, 'permit(principal, action, resource) when { context.calls.day * 9223372036854775807 > 0 };');
  assert.throws(() => o.evaluate(request({ calls: { minute: 0, hour: 0, day: 2 } })), PolicyEvalError);
});

test('a task value of another type than the schema declares fails closed, not silently unequal', () => {
  // Cedar finds 3 == "basic" false without an error: the forbid would stop applying.
  const e = loadPolicy(
    SMALL,
    '@id("all") permit(principal, action, resource);\n@id("no-basic") forbid(principal, action, resource) when { context.task.tier == "basic" };',
    { task: { tier: 'gold', score: 0.5, ids: ['a'] } },
  );
  assert.deepEqual(e.evaluate(request({ task: { tier: 'basic' } })).policyIds, ['no-basic']);
  assert.throws(() => e.evaluate(request({ task: { tier: 3 } })), (err: unknown) => err instanceof PolicyEvalError && /task\.tier: expected String/.test(err.message));
  // attributes no policy reads are not sent to Cedar, whatever they hold
  assert.equal(e.evaluate(request({ task: { tier: 'gold', ids: [1], score: 0.123456, extra: { deep: [1.5, null] } } })).allow, true);
});

test('evaluation error messages name policies, never values', () => {
  const e = loadPolicy(SMALL, '@id("p") permit(principal, action, resource) when { context.task.n + 1 > 0 };', { task: { n: 1 } });
  try {
    e.evaluate(request({ task: { n: 'CANARY-7d1f' } }));
    assert.fail('expected a throw');
  } catch (err) {
    assert.ok(err instanceof PolicyEvalError);
    assert.doesNotMatch(err.message, /CANARY/);
  }
});

test('bad requests throw: undeclared tool, negative counts, a task value a policy reads that Cedar cannot hold', () => {
  const e = loadPolicy(SMALL, 'permit(principal, action, resource) when { context.task.xs.contains(1) || true };', { task: { xs: [1] } });
  assert.throws(() => e.evaluate(request({ tool: 'nope' })), PolicyEvalError);
  assert.throws(() => e.evaluate(request({ calls: { minute: -1, hour: 0, day: 0 } })), PolicyEvalError);
  assert.throws(() => e.evaluate(request({ calls: { minute: 1.5, hour: 0, day: 0 } })), PolicyEvalError);
  assert.throws(() => e.evaluate(request({ task: { xs: [1, null] } })), (err: unknown) => err instanceof PolicyEvalError && /task\.xs\[1\]/.test(err.message));
  // an argument is never a refusal by itself (marshal.test.ts)
  assert.equal(e.evaluate(request({ tool: 'send', task: { xs: [1] }, args: { price: 1.23456 } })).allow, true);
  assert.throws(() => e.evaluate({ ...request(), callsAll: undefined as never }), PolicyEvalError);
});

test('numbers: integers are Long, `number` arguments and fractions are decimal', () => {
  const e = loadPolicy(
    SMALL,
    `@id("cheap") permit(principal, action, resource == Tool::"send") when {
       context.args has price && context.args.price.lessThanOrEqual(decimal("10.5")) &&
       context.args has n && context.args.n < 3 };`,
  );
  assert.equal(e.evaluate(request({ tool: 'send', args: { price: 10.5, n: 2 } })).allow, true);
  assert.equal(e.evaluate(request({ tool: 'send', args: { price: 10, n: 2 } })).allow, true); // integral `number` → decimal
  assert.equal(e.evaluate(request({ tool: 'send', args: { price: 10.5001, n: 2 } })).allow, false);
  assert.equal(e.evaluate(request({ tool: 'send', args: { price: 1, n: 3 } })).allow, false);
});

test('sets: array arguments and task arrays are Cedar sets', () => {
  const e = loadPolicy(
    SMALL,
    'permit(principal, action, resource) when { context.args has tags && context.args.tags.contains("ok") && context.task.allowed.containsAll(context.args.tags) };',
    { task: { allowed: ['ok', 'fine'] } },
  );
  assert.equal(e.evaluate(request({ tool: 'send', args: { tags: ['ok'] }, task: { allowed: ['ok', 'fine'] } })).allow, true);
  assert.equal(e.evaluate(request({ tool: 'send', args: { tags: ['ok', 'evil'] }, task: { allowed: ['ok', 'fine'] } })).allow, false);
});

test('explain returns the decision with the texts of the deciding policies', () => {
  const e = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  const x = e.explain(request({ tool: 'send_email', args: { to: 'ada@example.com' }, task: exampleTask(), calls: { ...ZERO, hour: 7 } }));
  assert.equal(x.decision, 'deny');
  assert.deepEqual(x.policyIds, ['email-hourly-limit']);
  assert.match(x.policies[0].text, /^@id\("email-hourly-limit"\)\nforbid/);
  assert.match(x.policies[0].text, /context\.calls\.hour >= 5 \};$/);
  const none = e.explain(request({ tool: 'issue_refund', args: { order_id: 'O100001', amount: 1 }, task: { ...exampleTask(), tier: 'basic' } }));
  assert.equal(none.decision, 'deny');
  assert.match(none.summary, /no permit/);
  const failed = e.explain(request({ tool: 'issue_refund', args: { order_id: 'O100001', amount: 1 }, task: { id: 'T-2' } }));
  assert.equal(failed.decision, 'fail_closed');
  assert.ok(failed.errors.length > 0);
});

test('checkTask re-validates against another task shape', () => {
  const e = loadPolicyFile(exampleManifest(), EXAMPLE.policy, { task: exampleTask() });
  assert.deepEqual(e.checkTask(exampleTask()), []);
  const problems = e.checkTask({ id: 'T-9' });
  assert.ok(problems.some((p) => p.policyId === 'refund-premium-tier' && /task\.tier/.test(p.message)));
});
