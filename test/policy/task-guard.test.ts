// The policy bound to the task in force (task-guard.ts) and the policy check's fail_closed path,
// with real Cedar: a new task object is validated once; drift throws naming the policies; a
// shape that validates again recovers and converts values to its own types; the check turns
// every evaluation error into fail_closed with a detail free of argument values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPolicy, PolicyEvalError } from '../../src/policy/engine.js';
import { TaskBoundPolicy } from '../../src/policy/task-guard.js';
import { checkPolicy } from '../../src/gate/checks/policy.js';
import { newAnnotations } from '../../src/gate/decide.js';
import type { Facts } from '../../src/gate/facts.js';
import type { GateServices, PolicyService } from '../../src/gate/services.js';
import type { JsonObject } from '../../src/core/json.js';
import { request, SMALL } from './fixtures.js';

const POLICY = `@id("reads")
permit (principal, action, resource) when { resource.effect == "read" };
@id("gold-only")
forbid (principal, action, resource) unless { context.task.level == "gold" };
`;

test('a reloaded task is validated once; drift fails closed naming the policies; a fitting shape recovers', () => {
  const start: JsonObject = { id: 'T', level: 'gold' };
  const engine = loadPolicy(SMALL, POLICY, { task: start });
  let validations = 0;
  const adopt = engine.adoptTask.bind(engine);
  engine.adoptTask = (t) => (validations++, adopt(t));
  const drifts: string[] = [];
  const p = new TaskBoundPolicy(engine, start, { source: 'p.cedar', onDrift: (m) => drifts.push(m) });

  assert.equal(p.evaluate(request({ task: start })).allow, true);
  assert.equal(validations, 0, 'the start-up task was validated at load');

  const gone: JsonObject = { id: 'T' };
  for (let i = 0; i < 3; i++) {
    assert.throws(
      () => p.evaluate(request({ task: gone })),
      (e: unknown) => e instanceof PolicyEvalError && e.policyIds.join() === 'gold-only' && /changed shape/.test(e.message) && /"gold-only"/.test(e.message),
    );
  }
  assert.equal(validations, 1, 'once per new task object, not per call');
  assert.equal(drifts.length, 1);
  assert.match(drifts[0], /p\.cedar:4:\d+: .*task\.level/);

  const retyped: JsonObject = { id: 'T', level: 3 };
  assert.throws(() => p.evaluate(request({ task: retyped })), PolicyEvalError);

  // Back to a shape the policy validates against, with an extra attribute of a new type.
  const fits: JsonObject = { id: 'T', level: 'silver', extra: [1, 2] };
  const r = p.evaluate(request({ task: fits }));
  assert.equal(r.allow, false);
  assert.deepEqual(r.policyIds, ['gold-only']);
  assert.equal(p.digest, engine.digest);
});

test('an attribute no policy reads never reaches Cedar; one it reads keeps its type until a new shape is adopted', () => {
  const start: JsonObject = { id: 'T', level: 'gold', note: 'x' };
  const engine = loadPolicy(SMALL, POLICY, { task: start });
  // note is read by no policy: whatever it holds (another type, a value Cedar cannot hold) is not sent.
  for (const note of [5, 0.123456, [1, null], { __entity: { type: 'Agent', id: 'a' } }] as const)
    assert.equal(engine.evaluate(request({ task: { id: 'T', level: 'gold', note } as JsonObject })).allow, true);
  // level is read: without adopting, the start-up types hold.
  assert.throws(() => engine.evaluate(request({ task: { id: 'T', level: 5 } })), /task\.level: expected String/);
  const p = new TaskBoundPolicy(engine, start);
  assert.equal(p.evaluate(request({ task: { id: 'T', level: 'gold', note: 5 } })).allow, true);
});

function facts({ policy, ...services }: Partial<GateServices> & { policy: PolicyService }, args: JsonObject, task: JsonObject, tool = 'send'): Facts {
  return {
    policy,
    services: {
      agent: 'agent',
      mode: 'enforce',
      rates: { counts: () => ({ calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } }), record: () => undefined },
      ...services,
    } as GateServices,
    call: { tool, arguments: args, meta: {}, taskId: 'T' } as never,
    context: { task, taskId: 'T' } as never,
    sessionLabel: 'public',
    now: 0,
    notes: newAnnotations(),
  } as unknown as Facts;
}

test('checkPolicy: every evaluation error is fail_closed, with policy ids and no argument value', () => {
  const CANARY = 'canary-guard-77';
  const engine = loadPolicy(
    SMALL,
    `@id("all") permit (principal, action, resource);
@id("big") forbid (principal, action, resource) when { context.args has n && context.args.n * 1000000 > 5 };
@id("cap") forbid (principal, action, resource) when { context.task.cap.lessThan(decimal("1.0")) };
`,
    { task: { cap: 1.5 } },
  );
  const policy = new TaskBoundPolicy(engine, { cap: 1.5 });
  const cases: [JsonObject, JsonObject, RegExp, string[]][] = [
    [{ n: 9223372036859 }, { cap: 1.5 }, /^policy evaluation error in "big"$/, ['big']],
    // A task value a policy reads that Cedar cannot hold (same shape): the task context is at fault.
    [{}, { cap: 1.777123456, note: CANARY }, /^policy context: task\.cap: number has more than 4 decimal places/, []],
  ];
  for (const [args, task, detail, ids] of cases) {
    const f = facts({ policy }, args, task);
    const v = checkPolicy(f);
    assert.ok(!v.ok);
    assert.equal(v.code, 'fail_closed');
    assert.match(v.detail, detail);
    for (const leak of [CANARY, '9223372036859', '123456']) assert.ok(!v.detail.includes(leak), `${leak} in ${v.detail}`);
    assert.deepEqual(f.notes.fields.policy_ids, ids);
    assert.equal(f.notes.onAllow.length, 0, 'nothing is counted');
  }
  // Anything else a policy service throws is not swallowed: the gate refuses it fail_closed.
  assert.throws(() => checkPolicy(facts({ policy: { digest: engine.digest, evaluate: () => { throw new TypeError('boom'); } } }, {}, {})), TypeError);
  // And an allow is counted once, in the decision's transaction.
  const ok = facts({ policy }, { n: 0 }, { cap: 1.5 });
  assert.equal(checkPolicy(ok).ok, true);
  assert.equal(ok.notes.onAllow.length, 1);
});

test('checkPolicy: an argument Cedar cannot hold is left out, never a refusal by itself; the entry names it', () => {
  const engine = loadPolicy(
    SMALL,
    `@id("all") permit (principal, action, resource);
@id("cap") forbid (principal, action, resource) unless { context.args has price && context.args.price.lessThan(decimal("10.0")) };
`,
  );
  const policy = new TaskBoundPolicy(engine, {});
  // `who` is read by no policy: not sent at all. `price` is read: left out, so `has` is false.
  const f = facts({ policy }, { price: 1.234567, who: { x: [null], __entity: 1 } }, {});
  const v = checkPolicy(f);
  assert.ok(!v.ok);
  assert.equal(v.code, 'policy_denied', 'the forbid written with `has` applies to a value Cedar cannot hold');
  assert.deepEqual(f.notes.fields.policy_omitted, ['price']);
  const ok = facts({ policy }, { price: 1.2345, who: { x: [null] } }, {});
  assert.equal(checkPolicy(ok).ok, true);
  assert.equal(ok.notes.fields.policy_omitted, undefined);
});
