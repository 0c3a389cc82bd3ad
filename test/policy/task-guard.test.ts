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
import type { GateServices } from '../../src/gate/services.js';
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

test('an attribute no policy reads may change type once the new shape is adopted', () => {
  const start: JsonObject = { id: 'T', level: 'gold', note: 'x' };
  const engine = loadPolicy(SMALL, POLICY, { task: start });
  // Without adopting, the start-up types hold: note must stay a string.
  assert.throws(() => engine.evaluate(request({ task: { id: 'T', level: 'gold', note: 5 } })), /task\.note: expected String/);
  const p = new TaskBoundPolicy(engine, start);
  assert.equal(p.evaluate(request({ task: { id: 'T', level: 'gold', note: 5 } })).allow, true);
});

function facts(services: Partial<GateServices>, args: JsonObject, task: JsonObject, tool = 'send'): Facts {
  return {
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
`,
  );
  const policy = new TaskBoundPolicy(engine, {});
  const cases: [JsonObject, RegExp, string[]][] = [
    [{ n: 9223372036859 }, /^policy evaluation error in "big"$/, ['big']],
    [{ price: 1.234567 }, /^policy context: args\.price: number has more than 4 decimal places/, []],
    // Inside an `object` argument the keys are the caller's: the detail names only the argument.
    [{ who: { [CANARY]: 0.123456 } }, /^policy context: args\.who: number has more than 4 decimal places/, []],
    [{ who: { [CANARY]: { __entity: { type: 'Agent', id: CANARY } } } }, /^policy context: args\.who: key beginning with "__"/, []],
  ];
  for (const [args, detail, ids] of cases) {
    const f = facts({ policy }, args, {});
    const v = checkPolicy(f);
    assert.ok(!v.ok);
    assert.equal(v.code, 'fail_closed');
    assert.match(v.detail, detail);
    for (const leak of [CANARY, '9223372036859', '234567', '123456']) assert.ok(!v.detail.includes(leak), `${leak} in ${v.detail}`);
    assert.deepEqual(f.notes.fields.policy_ids, ids);
    assert.equal(f.notes.onAllow.length, 0, 'nothing is counted');
  }
  // Anything else a policy service throws is not swallowed: the gate refuses it fail_closed.
  assert.throws(() => checkPolicy(facts({ policy: { digest: engine.digest, evaluate: () => { throw new TypeError('boom'); } } }, {}, {})), TypeError);
  // And an allow is counted once, in the decision's transaction.
  const ok = facts({ policy }, { n: 0 }, {});
  assert.equal(checkPolicy(ok).ok, true);
  assert.equal(ok.notes.onAllow.length, 1);
});
