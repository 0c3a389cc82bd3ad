// The Cedar step decides exactly as a plain, full Cedar evaluation would (ADR 039). The engine
// sends Cedar only what the policies read (records, attributes, tool attributes), sends a rate
// window that policies only compare with literals as the smallest count comparing alike, and
// reuses the answer of an identical request. The reference here does none of that: every
// context record with every value, every tool entity with every attribute, the real counts,
// one `statefulIsAuthorized` per request against its own preparse of the same policies.
// Randomized requests over the repository's example policies and over sets written to reach
// every path: forbids on counters (each comparison operator, literal on either side, arithmetic),
// `like`, decimals, `has`, tool literals, a whole record compared, rules that error at run time.
import '../../src/policy/v8-guard.js'; // before Cedar: this file asks Cedar thousands of times
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { Manifest } from '../../src/contract/manifest-types.js';
import type { JsonObject, JsonValue } from '../../src/core/json.js';
import { loadManifest } from '../../src/contract/manifest.js';
import { loadPolicy, PolicyEvalError, type PolicyRequest } from '../../src/policy/engine.js';
import { parsePolicySet } from '../../src/policy/load.js';
import { countClass, marshalArgs } from '../../src/policy/marshal.js';
import { policyReads, scopeMayApply } from '../../src/policy/reads.js';
import { argsRecordType, inferRecord, toolAttributes } from '../../src/policy/schema.js';
import { recordToCedar } from '../../src/policy/values.js';
import { TaskBoundPolicy } from '../../src/policy/task-guard.js';
import { MANIFEST as BENCH_MANIFEST, POLICY as BENCH_POLICY, CONTEXT as BENCH_CONTEXT } from '../../bench/lib.js';
import { buildManifest } from '../../src/contract/manifest.js';
import { parse as parseYaml } from 'yaml';
import { EXAMPLE, ROOT, SMALL, exampleManifest, exampleTask, request } from './fixtures.js';

type Outcome = { allow: boolean; policyIds: string[] } | 'fail_closed';

let refs = 0;

/** The plain evaluation: the complete request, nothing left out, nothing reused. */
function reference(manifest: Manifest, text: string, startTask: JsonObject | undefined) {
  const id = `reference-${++refs}`;
  const r = cedar.preparsePolicySet(id, { staticPolicies: parsePolicySet(manifest, text, 'p').staticPolicies });
  assert.equal(r.type, 'success');
  const taskTypes = startTask ? inferRecord(startTask).attributes : {};
  const argTypes = argsRecordType(manifest).attributes;
  const entities = Object.entries(manifest.tools).map(([name, decl]) => ({ uid: { type: 'Tool', id: name }, attrs: toolAttributes(manifest, decl), parents: [] }));
  return (req: PolicyRequest): Outcome => {
    const context = {
      task: recordToCedar(req.task, 'task', taskTypes), // the generators keep every task value convertible
      args: marshalArgs(req.args, { reads: 'all', types: argTypes }).context,
      session: { label: req.sessionLabel },
      calls: req.calls,
      calls_all: req.callsAll,
    };
    const a = cedar.statefulIsAuthorized({
      principal: { type: 'Agent', id: req.agent },
      action: { type: 'Action', id: 'call_tool' },
      resource: { type: 'Tool', id: req.tool },
      context: context as unknown as cedar.Context,
      preparsedPolicySetId: id,
      entities: entities as cedar.EntityJson[],
    });
    if (a.type === 'failure' || a.response.diagnostics.errors.length > 0) return 'fail_closed';
    return { allow: a.response.decision === 'allow', policyIds: [...a.response.diagnostics.reason].sort() };
  };
}

function outcome(fn: () => { allow: boolean; policyIds: string[] }): Outcome {
  try {
    const r = fn();
    return { allow: r.allow, policyIds: r.policyIds };
  } catch (e) {
    if (e instanceof PolicyEvalError) return 'fail_closed';
    throw e;
  }
}

/** Counts around every literal the sets compare with, and far beyond. */
const count = fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 99, 100, 101, 100_000_000, 2 ** 40);
const windows = fc.record({ minute: count, hour: count, day: count });

/** Values for an argument of each declared type, some of them ones Cedar cannot hold. */
function argValue(rule: { type?: string }): fc.Arbitrary<JsonValue> {
  const odd = fc.constantFrom<JsonValue>(null, 1.23456, 2 ** 60, 'text', { __entity: { type: 'Agent', id: 'admin' } });
  const typed: Record<string, fc.Arbitrary<JsonValue>> = {
    string: fc.constantFrom('doc-1', 'doc', 'x', 'ada@example.com', 'eve@evil.example', 'O100001', 'O999999', 'C000042', 'hello', 'a BEGIN PRIVATE KEY b'),
    integer: fc.constantFrom(0, 1, 2, 3, -3, 7),
    number: fc.constantFrom(0.01, 0.5, 10.5, 10.5001, 12.3456, 20, 499.99, 500.0001),
    boolean: fc.boolean(),
    array: fc.subarray(['a', 'blocked', 'b']),
    object: fc.constantFrom<JsonValue>({}, { a: 1 }),
  };
  return fc.oneof({ weight: 6, arbitrary: typed[rule.type ?? ''] ?? odd }, { weight: 1, arbitrary: odd });
}

function argsFor(manifest: Manifest, tool: string): fc.Arbitrary<JsonObject> {
  const rules = (manifest.tools[tool].arguments ?? {}) as Record<string, { type?: string }>;
  const names = Object.keys(rules);
  return fc.record(Object.fromEntries(names.map((n) => [n, argValue(rules[n])])), { requiredKeys: [] }) as fc.Arbitrary<JsonObject>;
}

function requests(manifest: Manifest, tasks: fc.Arbitrary<JsonObject>): fc.Arbitrary<PolicyRequest> {
  const tools = Object.keys(manifest.tools);
  return fc.constantFrom(...tools).chain((tool) =>
    fc.record({
      agent: fc.constantFrom('agent', 'bot'),
      tool: fc.constant(tool),
      args: argsFor(manifest, tool),
      task: tasks,
      sessionLabel: fc.constantFrom(...manifest.labels),
      calls: windows,
      callsAll: windows,
    }),
  );
}

interface Case {
  name: string;
  manifest: Manifest;
  policy: string;
  task?: JsonObject;
  tasks: fc.Arbitrary<JsonObject>;
}

const SMALL_TASK: JsonObject = { tier: 'premium', n: 1, ratio: 0.5, tags: ['send-ok'], owner: { id: 'ada' } };
const smallTasks: fc.Arbitrary<JsonObject> = fc.record({
  tier: fc.constantFrom('premium', 'standard'),
  n: fc.constantFrom(0, 2, 3, 9),
  ratio: fc.constantFrom(0.5, 0.75, 0.7501, 1.25),
  tags: fc.subarray(['send-ok', 'x']),
  owner: fc.record({ id: fc.constantFrom('ada', 'mallory') }),
});

const SETS: Record<string, string> = {
  counters: `@id("all") permit(principal, action, resource);
    @id("hourly") forbid(principal, action, resource == Tool::"send") when { context.calls.hour >= 5 };
    @id("exactly-3") forbid(principal, action, resource) when { context.calls.minute == 3 };
    @id("left-literal") forbid(principal, action, resource) when { 7 < context.calls_all.day };
    @id("not-two") forbid(principal, action, resource) when { !(context.calls_all.minute != 2) && resource.effect == "write" };
    @id("below") forbid(principal, action, resource == Tool::"read_doc") when { context.calls_all.hour < 1 && context.calls.day <= 100 };
    @id("arith") forbid(principal, action, resource) when { context.calls.day * 2 > 9 && context.calls.day > 0 };
    @id("branch") forbid(principal, action, resource) when { if context.calls.minute > 8 then context.calls_all.hour == 100 else false };`,
  args: `@id("reads") permit(principal, action, resource == Tool::"read_doc") when { context.args has id && context.args.id like "doc-*" };
    @id("sends") permit(principal, action, resource == Tool::"send");
    @id("cheap") forbid(principal, action, resource == Tool::"send") unless { context.args has price && context.args.price.lessThanOrEqual(decimal("10.5")) };
    @id("no-evil") forbid(principal, action, resource) when { context.args has to && context.args.to like "*@evil.example" };
    @id("tags") forbid(principal, action, resource) when { context.args has tags && context.args.tags.contains("blocked") };
    @id("n") forbid(principal, action, resource) when { context.args has n && context.args.n == 7 };`,
  entities: `@id("by-attr") permit(principal, action, resource) when { resource.effect == "read" || (resource.approval == "required" && Tool::"read_doc".returns == "confidential") };
    @id("bot-only") forbid(principal, action, resource == Tool::"send") unless { principal == Agent::"bot" };
    @id("label") forbid(principal, action, resource) when { context.session.label == "restricted" && resource.accepts != "restricted" };
    @id("in") forbid(principal, action, resource in Tool::"read_doc") when { context.calls.minute > 3 };
    @id("is") permit(principal, action, resource is Tool) when { context.session.label == "internal" };`,
  errors: `@id("all") permit(principal, action, resource);
    @id("overflow") forbid(principal, action, resource == Tool::"send") when { context.args has n && context.args.n * 4611686018427387904 > 0 };
    @id("count-overflow") forbid(principal, action, resource) when { context.calls.hour * 2305843009213693952 < 0 };
    @id("ratio") forbid(principal, action, resource) when { context.task.ratio.greaterThan(decimal("0.75")) };`,
  records: `@id("quiet") permit(principal, action, resource) when { context.calls == {minute: 0, hour: 0, day: 0} || context has session };
    @id("standard") forbid(principal, action, resource) when { context.task has tier && context.task.tier == "standard" && context.calls.minute >= 2 };
    @id("owner") forbid(principal, action, resource) when { context.task.owner.id == "mallory" };
    @id("tasks") forbid(principal, action, resource == Tool::"send") unless { context.task.tags.contains("send-ok") && context.task.n < 3 };`,
  nothing: `@id("reads") permit(principal, action, resource == Tool::"read_doc");
    @id("no-send") forbid(principal, action == Action::"call_tool", resource == Tool::"send");`,
  whole: `@id("whole") permit(principal, action, resource) when { context has args && context has task && context.calls_all has day };
    @id("obj") forbid(principal, action, resource) when { context.args has who && context.args.who == {} };`,
};

function cases(): Case[] {
  const example = exampleManifest();
  const exampleTasks = fc.record({
    id: fc.constant('T-1042'),
    tier: fc.constantFrom('premium', 'standard'),
    customer: fc.constant(exampleTask().customer),
    order_ids: fc.subarray(['O100001', 'O100002']),
  });
  const demo = loadManifest(join(ROOT, 'examples/demo/manifest.yaml')).manifest;
  const demoTask = JSON.parse(readFileSync(join(ROOT, 'examples/demo/context.json'), 'utf8')).task as JsonObject;
  const bench = buildManifest(parseYaml(BENCH_MANIFEST)).manifest;
  return [
    { name: 'examples/support-agent', manifest: example, policy: readFileSync(EXAMPLE.policy, 'utf8'), task: exampleTask(), tasks: exampleTasks },
    { name: 'examples/demo', manifest: demo, policy: readFileSync(join(ROOT, 'examples/demo/policy.cedar'), 'utf8'), task: demoTask, tasks: fc.constant(demoTask) },
    { name: 'bench', manifest: bench, policy: BENCH_POLICY, task: BENCH_CONTEXT.task, tasks: fc.constant(BENCH_CONTEXT.task as JsonObject) },
    ...Object.entries(SETS).map(([name, policy]) => ({ name, manifest: SMALL, policy, task: SMALL_TASK, tasks: smallTasks })),
  ];
}

test('differential: pruned and reused answers equal a full statefulIsAuthorized, over random requests and every set', () => {
  for (const c of cases()) {
    const engine = loadPolicy(c.manifest, c.policy, { task: c.task });
    const full = reference(c.manifest, c.policy, c.task);
    const seen = new Set<string>();
    const asked: [PolicyRequest, Outcome][] = [];
    fc.assert(
      fc.property(requests(c.manifest, c.tasks), (req) => {
        const want = full(req);
        seen.add(want === 'fail_closed' ? want : `${want.allow}:${want.policyIds.join(',')}`);
        assert.deepEqual(outcome(() => engine.evaluateFresh(req)), want, `${c.name}, fresh: ${JSON.stringify(req)}`);
        assert.deepEqual(outcome(() => engine.evaluate(req)), want, `${c.name}, reused: ${JSON.stringify(req)}`);
        asked.push([req, want]);
      }),
      { numRuns: 400, seed: 16_039 + refs },
    );
    // The same requests again, in another order: every decision now comes from the cache (400
    // keys fit), every error is evaluated again.
    const reused = engine.answers.counts.reused;
    for (const [req, want] of asked.reverse()) assert.deepEqual(outcome(() => engine.evaluate(req)), want, `${c.name}, again: ${JSON.stringify(req)}`);
    const decided = asked.filter(([, want]) => want !== 'fail_closed').length;
    assert.equal(engine.answers.counts.reused - reused, decided, `${c.name}: each decision asked again is reused`);
    assert.ok(decided > 0, `${c.name}: nothing decided`);
    assert.ok(seen.size > 1 || c.name === 'examples/demo', `${c.name}: only ${[...seen]}`);
  }
});

test('differential: the errors set fails closed where the full request errors, and is never reused', () => {
  const e = loadPolicy(SMALL, SETS.errors, { task: SMALL_TASK });
  const full = reference(SMALL, SETS.errors, SMALL_TASK);
  const req = request({ tool: 'send', args: { n: 2 }, task: SMALL_TASK });
  assert.equal(full(req), 'fail_closed');
  const before = e.answers.counts.evaluated;
  for (let i = 0; i < 3; i++) assert.throws(() => e.evaluate(req), PolicyEvalError);
  assert.equal(e.answers.counts.evaluated - before, 3, 'each erroring request is evaluated by Cedar again');
  assert.equal(outcome(() => e.evaluate({ ...req, calls: { minute: 0, hour: 4, day: 0 } })), 'fail_closed', 'hour × 2^61 overflows');
  assert.deepEqual(outcome(() => e.evaluate({ ...req, args: { n: 0 } })), { allow: true, policyIds: ['all'] });
});

test('countClass: the count sent compares with every literal as the real count does', () => {
  const ops = [(a: number, b: number) => a < b, (a: number, b: number) => a <= b, (a: number, b: number) => a === b, (a: number, b: number) => a > b];
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: -5, max: 40 }), { maxLength: 6 }), fc.nat(50), (lits, n) => {
      const sorted = [...lits].sort((a, b) => a - b);
      const k = countClass(n, sorted);
      assert.ok(k >= 0 && k <= n + 1 && Number.isSafeInteger(k));
      for (const lit of sorted) for (const op of ops) assert.equal(op(k, lit), op(n, lit), `${n} → ${k} against ${lit}`);
    }),
    { numRuns: 2000 },
  );
  assert.equal(countClass(3, []), 0);
  assert.equal(countClass(7, [5]), 6);
  assert.equal(countClass(5, [5]), 5);
  assert.equal(countClass(4, [5]), 0);
});

test('reuse is keyed by agent, tool, context and the class of each count', () => {
  const e = loadPolicy(SMALL, SETS.entities + SETS.counters.replace('@id("all") permit(principal, action, resource);', ''), { task: SMALL_TASK });
  const d = (over: Partial<PolicyRequest>) => outcome(() => e.evaluate(request({ task: SMALL_TASK, ...over })));
  // agent
  assert.equal((d({ agent: 'bot', tool: 'send' }) as { allow: boolean }).allow, true);
  assert.deepEqual(d({ agent: 'eve', tool: 'send' }), { allow: false, policyIds: ['bot-only'] });
  assert.equal((d({ agent: 'bot', tool: 'send' }) as { allow: boolean }).allow, true);
  // tool (read_doc's counters: `below` needs calls_all.hour ≥ 1 to let it through)
  const quiet = { minute: 0, hour: 1, day: 0 };
  assert.deepEqual(d({ agent: 'bot', tool: 'read_doc', callsAll: quiet }), { allow: true, policyIds: ['by-attr'] });
  assert.deepEqual(d({ agent: 'bot', tool: 'send', callsAll: quiet }), { allow: true, policyIds: ['by-attr'] });
  // session label
  assert.deepEqual(d({ agent: 'bot', tool: 'send', sessionLabel: 'restricted', callsAll: quiet }), { allow: false, policyIds: ['label'] });
  // counts across each literal, up and down again
  const hour = (h: number) => d({ agent: 'bot', tool: 'send', callsAll: quiet, calls: { minute: 0, hour: h, day: 0 } });
  assert.deepEqual([4, 5, 6, 4, 0, 5].map((h) => (hour(h) as { allow: boolean }).allow), [true, false, false, true, true, false]);
  const minute = (m: number) => d({ agent: 'bot', tool: 'send', callsAll: quiet, calls: { minute: m, hour: 0, day: 0 } });
  assert.deepEqual([2, 3, 4, 3, 9, 2].map((m) => (minute(m) as { allow: boolean }).allow), [true, false, true, false, true, true]);
  // a window read in arithmetic is keyed by its exact value
  const day = (n: number) => d({ agent: 'bot', tool: 'send', callsAll: quiet, calls: { minute: 0, hour: 0, day: n } });
  assert.deepEqual([4, 5, 4, 6].map((n) => (day(n) as { allow: boolean }).allow), [true, false, true, false]);
  assert.ok(e.answers.counts.reused > 0);
});

test('reuse follows the task in force: a reloaded task value, or a new shape adopted, is a new request', () => {
  const e = loadPolicy(SMALL, SETS.records, { task: SMALL_TASK });
  const bound = new TaskBoundPolicy(e, SMALL_TASK);
  const ask = (task: JsonObject) => outcome(() => bound.evaluate(request({ tool: 'read_doc', task, calls: { minute: 3, hour: 0, day: 0 } })));
  assert.deepEqual(ask(SMALL_TASK), { allow: true, policyIds: ['quiet'] });
  assert.deepEqual(ask({ ...SMALL_TASK, tier: 'standard' }), { allow: false, policyIds: ['standard'] });
  assert.deepEqual(ask({ ...SMALL_TASK, owner: { id: 'mallory' } }), { allow: false, policyIds: ['owner'] });
  assert.deepEqual(ask({ ...SMALL_TASK }), { allow: true, policyIds: ['quiet'] }, 'a new task object with the old values');
  // Drift (tier gone from the shape) fails closed before any answer is looked up.
  const { tier: _tier, ...noTier } = SMALL_TASK;
  assert.equal(ask(noTier), 'fail_closed');
  assert.deepEqual(ask(SMALL_TASK), { allow: true, policyIds: ['quiet'] });
});

test('a reloaded policy is a new engine: an answer of the old one is never given', () => {
  const req = request({ tool: 'send' });
  const before = loadPolicy(SMALL, '@id("all") permit(principal, action, resource);');
  assert.equal(before.evaluate(req).allow, true);
  const after = loadPolicy(SMALL, '@id("none") forbid(principal, action, resource);\n@id("all") permit(principal, action, resource);');
  assert.deepEqual(after.evaluate(req), { allow: false, policyIds: ['none'], omitted: [] });
  assert.equal(before.evaluate(req).allow, true);
  assert.equal(after.answers.counts.evaluated, 1);
});

test('the answer cache is bounded, and a request too long to keep is decided every time', () => {
  const e = loadPolicy(SMALL, SETS.args);
  for (let i = 0; i < 1500; i++) e.evaluate(request({ tool: 'read_doc', args: { id: `doc-${i}` } }));
  assert.ok(e.answers.size <= 1024, `${e.answers.size} kept`);
  const long = request({ tool: 'read_doc', args: { id: 'doc-' + 'x'.repeat(4000) } });
  const n = e.answers.counts.evaluated;
  assert.equal(e.evaluate(long).allow, true);
  assert.equal(e.evaluate(long).allow, true);
  assert.equal(e.answers.counts.evaluated - n, 2);
  // the answers handed out are copies: a caller changing one changes no later answer
  const a = e.evaluate(request({ tool: 'read_doc', args: { id: 'doc-1' } }));
  a.policyIds.push('tampered');
  assert.deepEqual(e.evaluate(request({ tool: 'read_doc', args: { id: 'doc-1' } })).policyIds, ['reads']);
});

test('policyReads: records, session, each rate window (literals or exact) and entity attributes read', () => {
  const reads = (text: string) => {
    const j = cedar.policyToJson(text);
    assert.equal(j.type, 'success');
    const r = policyReads([{ json: (j as { json: { conditions: unknown } }).json }]);
    const set = (s: 'all' | ReadonlySet<string>) => (s === 'all' ? 'all' : [...s].sort().join(','));
    return { records: set(r.records), session: set(r.session), calls: r.calls, callsAll: r.callsAll, entity: [...r.entityAttrs].sort().join(',') };
  };
  const none = { minute: null, hour: null, day: null };
  assert.deepEqual(reads('permit(principal, action, resource);'), { records: '', session: '', calls: none, callsAll: none, entity: '' });
  assert.deepEqual(
    reads('permit(principal, action, resource) when { context.calls.hour >= 5 && 3 < context.calls.hour && context.calls_all has day && resource.effect == "read" };'),
    { records: 'calls,calls_all', session: '', calls: { minute: null, hour: [3, 5], day: null }, callsAll: { minute: null, hour: null, day: [] }, entity: 'effect' },
  );
  assert.deepEqual(
    reads('permit(principal, action, resource) when { context.calls.day + 1 > 5 && context.session.label == "x" && Tool::"t" has accepts };'),
    { records: 'calls,session', session: 'label', calls: { minute: null, hour: null, day: 'exact' }, callsAll: none, entity: 'accepts' },
  );
  assert.deepEqual(reads('permit(principal, action, resource) when { context.calls == {minute: 1, hour: 1, day: 1} && context has session };').calls, { minute: 'exact', hour: 'exact', day: 'exact' });
  assert.deepEqual(reads('permit(principal, action, resource) when { context.calls.minute == context.calls_all.minute };').calls.minute, 'exact');
  const whole = reads('permit(principal, action, resource) when { {a: context}.a.calls.minute == 1 };');
  assert.deepEqual([whole.records, whole.session, whole.calls.minute, whole.callsAll.day], ['all', 'all', 'exact', 'exact']);
});

test('a call sends what the policies that can apply to its tool read; conversion stays set-wide', () => {
  const scope = (text: string, tool: string) => {
    const j = cedar.policyToJson(text);
    assert.equal(j.type, 'success');
    return scopeMayApply((j as { json: { resource?: unknown } }).json, tool);
  };
  assert.equal(scope('permit(principal, action, resource);', 'send'), true);
  assert.equal(scope('permit(principal, action, resource == Tool::"send");', 'send'), true);
  assert.equal(scope('permit(principal, action, resource == Tool::"send");', 'read_doc'), false);
  assert.equal(scope('permit(principal, action, resource in Tool::"send");', 'read_doc'), false);
  assert.equal(scope('permit(principal, action, resource is Tool in Tool::"send");', 'read_doc'), false);
  assert.equal(scope('permit(principal, action, resource is Tool);', 'read_doc'), true);
  const e = loadPolicy(
    SMALL,
    `@id("ratio") permit(principal, action, resource == Tool::"send") when { context.task.ratio.greaterThan(decimal("0.1")) && context.args has price };
     @id("docs") permit(principal, action, resource == Tool::"read_doc") when { context.calls.hour < 5 };`,
    { task: SMALL_TASK },
  );
  // A task value Cedar cannot hold (5 decimals) that only the send policy reads still fails a
  // read_doc call closed, as when every policy's reads were sent with every call.
  assert.equal(outcome(() => e.evaluate(request({ tool: 'read_doc', task: { ...SMALL_TASK, ratio: 0.12345 } }))), 'fail_closed');
  // read_doc's requests differ only in what read_doc's policies read: one Cedar evaluation.
  const n = e.answers.counts.evaluated;
  for (const ratio of [0.5, 0.75, 1.25]) assert.equal(e.evaluate(request({ tool: 'read_doc', task: { ...SMALL_TASK, ratio }, args: { id: `d${ratio}` } })).allow, true);
  assert.equal(e.answers.counts.evaluated - n, 1);
  assert.equal(e.evaluate(request({ tool: 'send', task: SMALL_TASK, args: { price: 12.5 } })).allow, true);
  assert.equal(e.evaluate(request({ tool: 'send', task: { ...SMALL_TASK, ratio: 0.1 }, args: { price: 12.5 } })).allow, false);
  assert.deepEqual(e.evaluate(request({ tool: 'send', task: SMALL_TASK, args: { price: 1.23456 } })), { allow: false, policyIds: [], omitted: ['price'] });
});

test('the counts a call needs are those the policies that can apply to its tool read: calls, calls_all, both (context whole) or none', () => {
  const e = loadPolicy(
    SMALL,
    `@id("docs") permit(principal, action, resource == Tool::"read_doc") when { context.calls.hour < 5 };
     @id("send") permit(principal, action, resource == Tool::"send") when { context.args has price };
     @id("all") forbid(principal, action, resource == Tool::"send") when { context.calls_all has day };`,
    { task: SMALL_TASK },
  );
  assert.deepEqual(e.countsRead('read_doc'), { calls: true, callsAll: false });
  assert.deepEqual(e.countsRead('send'), { calls: false, callsAll: true });
  assert.deepEqual(e.countsRead('not_declared'), { calls: true, callsAll: true }, 'unknown: both (evaluate refuses it anyway)');
  const none = loadPolicy(SMALL, 'permit(principal, action, resource);', { task: SMALL_TASK });
  assert.deepEqual(none.countsRead('send'), { calls: false, callsAll: false });
  const whole = loadPolicy(SMALL, 'permit(principal, action, resource == Tool::"send") when { {a: context}.a.session.label == "x" };', { task: SMALL_TASK });
  assert.deepEqual(whole.countsRead('send'), { calls: true, callsAll: true }, 'a policy reading context whole reads every count');
  // The task-bound policy the gate holds answers the same.
  assert.deepEqual(new TaskBoundPolicy(e, SMALL_TASK).countsRead('read_doc'), { calls: true, callsAll: false });
});
