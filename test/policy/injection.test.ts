// Cedar's JSON value format reads {"__entity": …} as an entity reference and {"__extn": …} as an
// extension value. A model-written argument shaped like one must never make a policy match.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { loadPolicy, PolicyEvalError, PolicyLoadError } from '../../src/policy/engine.js';
import { toCedar, recordToCedar, ValueConversionError, decimalText } from '../../src/policy/values.js';
import type { JsonObject, JsonValue } from '../../src/core/json.js';
import { SMALL, jsonValues, request } from './fixtures.js';
import { toolArgTypes } from '../../src/policy/schema.js';

// Policies that would allow if an argument or task value became the entity Agent::"admin".
// Cedar's validator already refuses them against the generated schema (no context value is
// entity-typed); the tests below evaluate them without a schema, as Cedar sees the request, to
// show the value conversion holds on its own.
const TRAP = {
  entityInArgs: 'permit(principal, action, resource) when { context.args has who && context.args.who == Agent::"admin" };',
  entityInTask: 'permit(principal, action, resource) when { context.task has owner && context.task.owner == Agent::"admin" };',
  nested: 'permit(principal, action, resource) when { context.args has who && context.args.who has nested && context.args.who.nested == Agent::"admin" };',
  decimal: 'permit(principal, action, resource) when { context.args has who && context.args.who == decimal("1.0") };',
};
const TRAP_SET = { staticPolicies: TRAP };

const ESCAPES: JsonObject[] = [
  { __entity: { type: 'Agent', id: 'admin' } },
  { __entity: { type: 'Agent', id: 'admin' }, other: 1 },
  { __extn: { fn: 'decimal', arg: '1.0' } },
  { __expr: 'Agent::"admin"' },
  { nested: { __entity: { type: 'Agent', id: 'admin' } } },
  { type: 'Agent', id: 'admin' },
];

/** Ask Cedar directly, no schema: does the trap allow this (already converted) context? */
function trapAllows(context: Record<string, unknown>): boolean {
  const a = cedar.isAuthorized({
    principal: { type: 'Agent', id: 'agent' },
    action: { type: 'Action', id: 'call_tool' },
    resource: { type: 'Tool', id: 'send' },
    context: context as cedar.Context,
    policies: TRAP_SET,
    entities: [],
  });
  return a.type === 'success' && a.response.decision === 'allow';
}

/** The engine's conversion followed by Cedar: refused by conversion, or denied. */
function convertedAllows(args: JsonObject, task: JsonObject): boolean {
  let context: Record<string, unknown>;
  try {
    context = { args: recordToCedar(args, 'args', toolArgTypes(SMALL.tools.send)), task: recordToCedar(task, 'task') };
  } catch (e) {
    assert.ok(e instanceof ValueConversionError);
    return false;
  }
  return trapAllows(context);
}

test('the trap is real: raw JSON escapes make Cedar match', () => {
  assert.equal(trapAllows({ args: { who: { __entity: { type: 'Agent', id: 'admin' } } }, task: {} }), true);
  assert.equal(trapAllows({ args: {}, task: { owner: { __entity: { type: 'Agent', id: 'admin' } } } }), true);
  assert.equal(trapAllows({ args: { who: { __extn: { fn: 'decimal', arg: '1.0' } } }, task: {} }), true);
});

test('converted, an __entity / __extn object in args or task never matches', () => {
  for (const v of ESCAPES) {
    assert.equal(convertedAllows({ who: v }, {}), false, JSON.stringify(v));
    assert.equal(convertedAllows({}, { owner: v }), false, JSON.stringify(v));
    assert.equal(convertedAllows({ who: [v] as never }, {}), false, JSON.stringify(v));
  }
});

test('an argument carrying a Cedar escape is left out (never reaches Cedar); a task attribute a policy reads fails closed', () => {
  const e = loadPolicy(
    SMALL,
    `@id("who") permit(principal, action, resource) when { context.args has who };
     @id("owner") forbid(principal, action, resource) when { context.task.owner has name && context.task.owner.name == "evil" };`,
    { task: { owner: { name: 'x' } } },
  );
  const task = { owner: { name: 'x' } };
  for (const v of ESCAPES) {
    const hasEscape = JSON.stringify(v).includes('"__');
    const args = e.evaluate(request({ tool: 'send', args: { who: v }, task }));
    assert.equal(args.allow, !hasEscape, JSON.stringify(v)); // a plain record is just a record
    assert.deepEqual(args.omitted, hasEscape ? ['who'] : []);
    const inTask = () => e.evaluate(request({ tool: 'send', task: { owner: v } }));
    if (hasEscape) assert.throws(inTask, PolicyEvalError, JSON.stringify(v));
    else assert.equal(inTask().allow, false); // no `who`: no permit
  }
  assert.throws(() => e.evaluate(request({ task: { owner: { __entity: { type: 'Agent', id: 'admin' } } } })), PolicyEvalError);
});

test("Cedar's validator refuses the trap policies against the generated schema", () => {
  for (const [name, text] of Object.entries(TRAP)) {
    assert.throws(() => loadPolicy(SMALL, text, { task: { owner: 'x' } }), PolicyLoadError, name);
  }
});

test('strings that look like escapes or entities stay strings', () => {
  const e = loadPolicy(SMALL, '@id("s") permit(principal, action, resource) when { context.args has to && context.args.to == "Agent::\\"admin\\"" };');
  assert.equal(e.evaluate(request({ tool: 'send', args: { to: 'Agent::"admin"' } })).allow, true);
  assert.equal(e.evaluate(request({ tool: 'send', args: { to: '{"__entity":{"type":"Agent","id":"admin"}}' } })).allow, false);
});

test('conversion refuses reserved keys and inexact numbers, by path and never by value', () => {
  assert.throws(() => toCedar({ a: [{ __extn: 1 }] }, 'args'), (e: unknown) => e instanceof ValueConversionError && /args\.a\[0\]/.test((e as Error).message));
  assert.throws(() => toCedar(0.123456, 'args.p'), (e: unknown) => e instanceof ValueConversionError && !/123456/.test((e as Error).message));
  assert.throws(() => toCedar(1e300, 'args.p'), ValueConversionError);
  assert.throws(() => toCedar(1e-7, 'args.p'), ValueConversionError);
  assert.equal(decimalText(-0, 'x'), '0.0');
  assert.equal(decimalText(-2.5, 'x'), '-2.5');
  assert.equal(decimalText(12.3456, 'x'), '12.3456');
  assert.deepEqual(recordToCedar({ a: null, b: 1 }, 't'), { b: 1 });
});

// Any JSON value: conversion either refuses, or yields a value whose only `__` key is the
// engine's own decimal escape, wrapping a string it wrote.
function onlyOwnEscapes(v: unknown): boolean {
  if (Array.isArray(v)) return v.every(onlyOwnEscapes);
  if (typeof v !== 'object' || v === null) return true;
  const keys = Object.keys(v);
  if (keys.some((k) => k.startsWith('__'))) {
    const x = (v as { __extn?: { fn: string; arg: unknown } }).__extn;
    return keys.length === 1 && x !== undefined && x.fn === 'decimal' && typeof x.arg === 'string' && /^-?\d+\.\d{1,4}$/.test(x.arg);
  }
  return Object.values(v).every(onlyOwnEscapes);
}

const escapeLike = fc.oneof(
  fc.constantFrom('__entity', '__extn', '__expr', '__proto__', 'type', 'id', 'fn', 'arg'),
  fc.string({ maxLength: 6 }),
);
const json = jsonValues({ stringMax: 8, keys: escapeLike });

test('property: converted values never carry an escape the engine did not write', () => {
  fc.assert(
    fc.property(json, (v) => {
      try {
        assert.ok(onlyOwnEscapes(toCedar(v as JsonValue, 'x')));
      } catch (e) {
        if (!(e instanceof ValueConversionError)) throw e;
      }
    }),
    { numRuns: 2000 },
  );
});

test('property: no argument or task value makes the trap match', () => {
  fc.assert(
    fc.property(json, json, (who, owner) => {
      assert.equal(convertedAllows({ who }, { owner }), false);
    }),
    { numRuns: 1000 },
  );
});
