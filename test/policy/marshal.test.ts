// The marshaller (policy/marshal.ts, reads.ts): only what the policies read reaches Cedar, and
// an argument value Cedar cannot hold is left out, never an error (product.md section 4).
// Properties run real Cedar over any JSON value: every marshalled context is one Cedar
// accepts, and every value marshalled means exactly the value given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Manifest } from '../../src/contract/manifest-types.js';
import type { JsonObject, JsonValue } from '../../src/core/json.js';
import { loadPolicy } from '../../src/policy/engine.js';
import { marshalArgs } from '../../src/policy/marshal.js';
import { policyReads } from '../../src/policy/reads.js';
import { argsRecordType } from '../../src/policy/schema.js';
import { jsonValues, request } from './fixtures.js';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';

const ARGS = {
  s: { type: 'string' },
  i: { type: 'integer' },
  d: { type: 'number' },
  b: { type: 'boolean' },
  ai: { type: 'array', items: { type: 'integer' } },
  ad: { type: 'array', items: { type: 'number' } },
  aa: { type: 'array' },
  o: { type: 'object' },
  u: {},
} as const;
const NAMES = Object.keys(ARGS);

const M: Manifest = {
  version: 1,
  release: 'marshal@1',
  labels: ['public', 'internal'],
  classify: [],
  tools: { t: { effect: 'read', arguments: ARGS as never } },
};

const PERMIT_ALL = '@id("all") permit(principal, action, resource);';
// Reads every typed argument by name (Cedar evaluates `||` left to right: all are read).
const READS_EACH = `@id("each") permit(principal, action, resource) when {
  (context.args has s && context.args.s == "x") || (context.args has i && context.args.i == 1) ||
  (context.args has d && context.args.d == decimal("1.0")) || (context.args has b && context.args.b) ||
  (context.args has ai && context.args.ai.contains(1)) || (context.args has ad && context.args.ad.isEmpty()) ||
  (context.args has o && context.args.o == {}) || true };`;
// Reads context.args whole: every argument is sent, typed or not.
const READS_ALL = '@id("whole") permit(principal, action, resource) when { context has args };';

const json = jsonValues({
  numbers: [fc.constantFrom(48.856613, 1e15, -1e15, 1e300, 2 ** 53 + 2, -0, 0.5, 12.3456, 922337203685477.5, 1e-7)],
  stringMax: 6,
  keys: fc.oneof(fc.constantFrom('__entity', '__extn', 'a', 'b'), fc.string({ maxLength: 4 })),
});
const argsArb: fc.Arbitrary<JsonObject> = fc.dictionary(fc.constantFrom(...NAMES), json, { maxKeys: NAMES.length });

/** Cedar's JSON value back to the JSON value it stands for (decimals as numbers, sets as arrays). */
function decode(v: unknown): JsonValue {
  if (Array.isArray(v)) return v.map(decode);
  if (typeof v === 'object' && v !== null) {
    const x = (v as { __extn?: { fn: string; arg: string } }).__extn;
    if (x) {
      assert.equal(x.fn, 'decimal');
      assert.match(x.arg, /^-?\d+\.\d{1,4}$/);
      return Number(x.arg);
    }
    return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, decode(e)]));
  }
  return Object.is(v, -0) ? 0 : (v as JsonValue); // JSON has one zero
}

/** The input as Cedar should see it: null-valued record attributes are absent. */
function withoutNullAttributes(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(withoutNullAttributes);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).filter(([, e]) => e !== null).map(([k, e]) => [k, withoutNullAttributes(e)]));
  return Object.is(v, -0) ? 0 : v;
}

test('12.7: numbers Cedar cannot hold and null inside an array are left out, not a refusal, under permit-all', () => {
  for (const policy of [PERMIT_ALL, READS_EACH, READS_ALL]) {
    const e = loadPolicy(M, policy);
    for (const args of [{ d: 48.856613 }, { d: 1e15 }, { ad: [1.5, null] }, { ai: [1, null] }, { aa: [null] }, { u: 1e300 }, { o: { x: [null] } }] as JsonObject[]) {
      const r = e.evaluate(request({ tool: 't', args }));
      assert.equal(r.allow, true, `${policy} ${JSON.stringify(args)}`);
    }
  }
});

test('only what the policies read is marshalled; what they read and cannot be held is named', () => {
  const e = loadPolicy(M, READS_EACH);
  const r = e.evaluate(request({ tool: 't', args: { d: 48.856613, i: 3, u: 1e300, aa: [null] } }));
  // u and aa have no type in the schema: no policy can name them, they are not sent
  assert.deepEqual(r.omitted, ['d']);
  assert.deepEqual(loadPolicy(M, PERMIT_ALL).evaluate(request({ tool: 't', args: { d: 48.856613 } })).omitted, []);
  assert.deepEqual(loadPolicy(M, READS_ALL).evaluate(request({ tool: 't', args: { d: 48.856613, u: 1e300, aa: [1] } })).omitted, ['d', 'u']);
});

test('a forbid written with `has` applies to a value left out; the 4-decimal value is compared exactly', () => {
  const e = loadPolicy(
    M,
    `@id("all") permit(principal, action, resource);
     @id("cap") forbid(principal, action, resource) unless { context.args has d && context.args.d.lessThanOrEqual(decimal("100.0")) };`,
  );
  assert.equal(e.evaluate(request({ tool: 't', args: { d: 99.9999 } })).allow, true);
  assert.equal(e.evaluate(request({ tool: 't', args: { d: 100.0001 } })).allow, false);
  for (const d of [48.856613, 1e15, 1e300]) assert.deepEqual(e.evaluate(request({ tool: 't', args: { d } })), { allow: false, policyIds: ['cap'], omitted: ['d'] });
});

test('policyReads: attribute paths count by their first attribute; any other use of context reads all', () => {
  const reads = (text: string) => {
    const j = cedar.policyToJson(text);
    assert.equal(j.type, 'success');
    const r = policyReads([{ json: (j as { json: { conditions: unknown } }).json }]);
    const show = (s: 'all' | ReadonlySet<string>) => (s === 'all' ? 'all' : [...s].sort().join(','));
    return { args: show(r.args), task: show(r.task), tools: r.toolLiterals };
  };
  assert.deepEqual(reads('permit(principal, action, resource);'), { args: '', task: '', tools: false });
  assert.deepEqual(
    reads('permit(principal, action, resource) when { context.args has a && context.args.a.b == 1 && context.task has c.d && context.calls.hour < 1 };'),
    { args: 'a', task: 'c', tools: false },
  );
  assert.deepEqual(reads('permit(principal, action, resource) when { context.args == {} };'), { args: 'all', task: '', tools: false });
  assert.deepEqual(reads('permit(principal, action, resource) when { context has task };'), { args: '', task: 'all', tools: false });
  assert.deepEqual(reads('permit(principal, action, resource) when { {a: context}.a.args.x == 1 };'), { args: 'all', task: 'all', tools: false });
  assert.deepEqual(reads('permit(principal, action, resource) when { context["args"]["x"] == 1 };'), { args: 'x', task: '', tools: false });
  assert.deepEqual(reads('permit(principal, action, resource) when { Tool::"t".effect == "read" };'), { args: '', task: '', tools: true });
});

test('property: any argument values, any policy shape: Cedar accepts the context and permit-all permits', () => {
  const engines = [PERMIT_ALL, READS_EACH, READS_ALL].map((p) => loadPolicy(M, p));
  fc.assert(
    fc.property(argsArb, (args) => {
      for (const e of engines) {
        const r = e.evaluate(request({ tool: 't', args }));
        assert.equal(r.allow, true);
        for (const k of r.omitted) assert.ok(Object.prototype.hasOwnProperty.call(args, k));
      }
    }),
    { numRuns: 400 },
  );
});

test('property: marshalArgs never throws; each value is left out or marshalled to exactly what was given', () => {
  const types = argsRecordType(M).attributes;
  fc.assert(
    fc.property(argsArb, fc.boolean(), (args, whole) => {
      const { context, omitted } = marshalArgs(args, { reads: whole ? 'all' : new Set(NAMES), types });
      for (const k of Object.keys(args)) {
        const sent = Object.prototype.hasOwnProperty.call(context, k);
        const typed = Object.prototype.hasOwnProperty.call(types, k);
        if (!typed && !whole) {
          assert.ok(!sent && !omitted.includes(k), `${k}: no policy can name it`);
          continue;
        }
        assert.notEqual(sent, omitted.includes(k), `${k}: either sent or named as left out`);
        if (sent) assert.deepEqual(decode(context[k]), withoutNullAttributes(args[k]));
      }
    }),
    { numRuns: 2000 },
  );
});

test('property: a value Cedar can hold is never left out', () => {
  const types = argsRecordType(M).attributes;
  const decimal = fc.integer({ min: -1e9, max: 1e9 }).map((n) => n / 10 ** 4);
  const holdable: fc.Arbitrary<JsonObject> = fc.record(
    {
      s: fc.string(),
      i: fc.maxSafeInteger(),
      d: fc.oneof(decimal, fc.integer()),
      b: fc.boolean(),
      ai: fc.array(fc.integer()),
      ad: fc.array(decimal),
      o: fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.oneof(fc.string(), fc.integer(), decimal)),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(holdable, (args) => {
      const { context, omitted } = marshalArgs(args, { reads: 'all', types });
      assert.deepEqual(omitted, []);
      assert.deepEqual(decode(context), withoutNullAttributes(args));
    }),
    { numRuns: 1000 },
  );
});
