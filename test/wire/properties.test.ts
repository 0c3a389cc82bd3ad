// Property tests: the strict parser agrees with JSON.parse on every valid JSON text it is meant
// to accept, never fails with anything but a WireError on mutated messages, and reads back the
// canonical form the gate forwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseStrict, WireError, foldKey } from '../../src/wire/strict-parse.js';
import { canonicalize } from '../../src/core/canonical.js';
import { callDigests, fingerprintOf } from '../../src/core/call.js';
import { digestJson } from '../../src/core/digest.js';
import type { JsonObject } from '../../src/core/json.js';
import { byteMutation, exactEqual, mutateBytes } from '../helpers/wire-gen.js';
import { decodeLine, encodeMessage, readableId } from '../../src/wire/message.js';
import type { JsonValue } from '../../src/core/json.js';

const RUNS = 1000;

/** True when v is something the strict parser must accept: no case-fold-duplicate keys, no unsafe numbers. */
function acceptable(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v) && !(Number.isInteger(v) && Math.abs(v) > Number.MAX_SAFE_INTEGER);
  if (Array.isArray(v)) return v.every(acceptable);
  if (v !== null && typeof v === 'object') {
    const seen = new Set<string>();
    for (const [k, x] of Object.entries(v)) {
      const f = foldKey(k);
      if (seen.has(f)) return false;
      seen.add(f);
      if (!acceptable(x)) return false;
    }
  }
  return true;
}

/** `v` with every number replaced by `f(number)`; keys kept as own data properties (`__proto__` too). */
function mapNumbers(v: JsonValue, f: (n: number) => number): JsonValue {
  if (typeof v === 'number') return f(v);
  if (Array.isArray(v)) return v.map((x) => mapNumbers(x, f));
  if (v !== null && typeof v === 'object') {
    const out: { [k: string]: JsonValue } = {};
    for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: mapNumbers(x, f), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}

const withoutNegativeZero = (v: JsonValue) => mapNumbers(v, (n) => (Object.is(n, -0) ? 0 : n));

function isWellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
      else return false;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}

/** Brings integers beyond ±(2^53−1) back into range (fc.jsonValue draws many of them). */
const safeNumbers = (v: JsonValue) => mapNumbers(v, (n) => (Number.isInteger(n) && Math.abs(n) > Number.MAX_SAFE_INTEGER ? n % 2 ** 52 : n));

// Keys an attacker would pick, mixed with arbitrary ones.
const trickyKey = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'to', 'é', 'ß', '1', '-0'));
const { tree } = fc.letrec<{ tree: JsonValue; leaf: JsonValue }>((tie) => ({
  leaf: fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ unit: 'grapheme' })) as fc.Arbitrary<JsonValue>,
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.array(tie('tree'), { maxLength: 4 }) as fc.Arbitrary<JsonValue>,
    fc.array(fc.tuple(trickyKey, tie('tree')), { maxLength: 4 }).map((entries) => {
      const o: { [k: string]: JsonValue } = {};
      for (const [k, x] of entries) Object.defineProperty(o, k, { value: x, enumerable: true, writable: true, configurable: true });
      return o as JsonValue;
    }),
  ),
}));

const validJson = fc
  .oneof(fc.jsonValue({ stringUnit: 'grapheme', maxDepth: 8 }) as fc.Arbitrary<JsonValue>, tree)
  .map(safeNumbers)
  .filter(acceptable);

test('on any valid JSON it accepts, parseStrict deep-equals JSON.parse (compact and indented)', () => {
  fc.assert(
    fc.property(validJson, fc.constantFrom(undefined, 2, '\t'), (v, indent) => {
      const text = JSON.stringify(v, null, indent);
      assert.deepStrictEqual(parseStrict(text), JSON.parse(text));
    }),
    { numRuns: RUNS },
  );
});

test('ASCII-heavy JSON with escapes: parseStrict deep-equals JSON.parse', () => {
  fc.assert(
    fc.property(fc.json({ maxDepth: 6 }).filter((t) => acceptable(JSON.parse(t))), (text) => {
      assert.deepStrictEqual(parseStrict(text), JSON.parse(text));
    }),
    { numRuns: RUNS },
  );
});

test('any string: accepted and equal to JSON.parse when well-formed, malformed_json when it has a lone surrogate', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 20 }), (s) => {
      const text = JSON.stringify(s); // well-formed stringify writes lone surrogates as \\uXXXX
      if (isWellFormed(s)) {
        assert.equal(parseStrict(text), JSON.parse(text));
      } else {
        assert.throws(() => parseStrict(text), (e: unknown) => e instanceof WireError && e.code === 'malformed_json');
        // Raw (unescaped) lone surrogates handed in as a JS string are refused too.
        assert.throws(() => parseStrict('"' + s.replace(/["\\\u0000-\u001f]/g, '') + '"'), (e: unknown) => e instanceof WireError && e.code === 'malformed_json');
      }
    }),
    { numRuns: RUNS },
  );
});

test('canonical round trip: parseStrict(canonicalize(v)) deep-equals v (-0 reads back as 0)', () => {
  fc.assert(
    fc.property(validJson, (v) => {
      const expected = withoutNegativeZero(v);
      assert.deepStrictEqual(parseStrict(canonicalize(v)), expected);
      assert.equal(canonicalize(parseStrict(canonicalize(v))), canonicalize(v));
    }),
    { numRuns: RUNS },
  );
});

// The earlier, plainly written form (map + join): the loop version must write the same bytes,
// including members whose value is undefined (skipped) and keys that sort by UTF-16 code units.
function referenceCanonical(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return Object.is(value, -0) ? '0' : JSON.stringify(value);
  if (typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return '[' + value.map(referenceCanonical).join(',') + ']';
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + referenceCanonical(o[k])).join(',') + '}';
}

test('canonicalize writes the same bytes as the reference form for any JSON value (undefined members skipped, sorted or not)', () => {
  const withHoles = fc.letrec((tie) => ({
    v: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ unit: 'binary', maxLength: 8 }), fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.string({ unit: 'binary', maxLength: 4 }), fc.option(tie('v'), { nil: undefined }), { maxKeys: 5 })),
  })).v;
  fc.assert(
    fc.property(withHoles, (v) => {
      const ref = referenceCanonical(v);
      assert.equal(canonicalize(v), ref);
      // Keys already in sorted order (a parsed canonical line) take the native path: same bytes.
      assert.equal(canonicalize(JSON.parse(ref)), ref);
    }),
    { numRuns: RUNS },
  );
  assert.equal(canonicalize({ b: [1, -0, 'x'], a: { d: undefined, c: true }, '\u00e9': null, '\ud83d\ude00': 1, '\uff61': 2 }), '{"a":{"c":true},"b":[1,0,"x"],"\u00e9":null,"\ud83d\ude00":1,"\uff61":2}');
  assert.throws(() => canonicalize({ a: Infinity }), TypeError);
  assert.throws(() => canonicalize([undefined]), TypeError);
  assert.throws(() => canonicalize({ a: [NaN] }), TypeError);
  assert.equal(canonicalize({ '10': 1, '9': 2 }), '{"10":1,"9":2}'); // integer-like keys: V8 lists 9 first
  assert.equal(canonicalize({ a: -0, b: [-0] }), '{"a":0,"b":[0]}');
});

test('callDigests: the fingerprint and args digest of the one-canonicalization path equal the plain ones', () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string({ maxLength: 6 }), validJson, { maxKeys: 5 }), fc.string({ maxLength: 10 }), fc.option(fc.string({ maxLength: 10 })), (args, tool, task) => {
      const d = callDigests(tool, args as JsonObject, task);
      assert.equal(d.fingerprint, fingerprintOf(tool, args as JsonObject, task));
      assert.equal(d.argsDigest, digestJson(args));
    }),
    { numRuns: RUNS },
  );
});

test('any finite double in its shortest form parses to itself, or refuses number_out_of_range only as an unsafe integer', () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
      const unsafe = Number.isInteger(d) && Math.abs(d) > Number.MAX_SAFE_INTEGER;
      for (const text of [String(d), d.toExponential(), d.toExponential().toUpperCase()]) {
        if (unsafe) {
          assert.throws(() => parseStrict(text), (e: unknown) => e instanceof WireError && e.code === 'number_out_of_range');
        } else {
          assert.ok(Object.is(parseStrict(text), Number(text)), text);
        }
      }
    }),
    { numRuns: RUNS },
  );
});


test('random decimal tokens: accepted exactly when the decimal value survives a trip through a double', () => {
  const token = fc
    .tuple(
      fc.boolean(),
      fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9][0-9]{0,24}$/)),
      fc.option(fc.stringMatching(/^[0-9]{1,24}$/), { nil: undefined }),
      fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.integer({ min: 0, max: 340 })), { nil: undefined }),
    )
    .map(([neg, int, frac, exp]) => (neg ? '-' : '') + int + (frac !== undefined ? '.' + frac : '') + (exp ? exp[0] + exp[1] + String(exp[2]) : ''));
  fc.assert(
    fc.property(token, (t) => {
      const v = Number(t);
      const isZero = /^-?0+(?:\.0+)?(?:[eE].*)?$/.test(t);
      const survives = isZero || (Number.isFinite(v) && v !== 0 && exactEqual(t, String(v)));
      const safe = !(Number.isInteger(v) && Math.abs(v) > Number.MAX_SAFE_INTEGER);
      if (survives && safe) assert.ok(Object.is(parseStrict(t), v), t);
      else assert.throws(() => parseStrict(t), (e: unknown) => e instanceof WireError && e.code === 'number_out_of_range', t);
    }),
    { numRuns: 2000 },
  );
});

test('a key and its upper- or lower-case spelling always collide as duplicate_key', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }), fc.constantFrom('upper', 'lower'), (k, how) => {
      const other = how === 'upper' ? k.toUpperCase() : k.toLowerCase();
      const text = `{${JSON.stringify(k)}:1,${JSON.stringify(other)}:2}`;
      assert.throws(() => parseStrict(text), (e: unknown) => e instanceof WireError && e.code === 'duplicate_key', JSON.stringify(k));
    }),
    { numRuns: RUNS },
  );
});

// JSON-RPC messages like the ones a host sends, and byte-level mutations of them.
const safeNumber = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e15, max: 1e15 }));
const args = fc.dictionary(
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.oneof(fc.string({ unit: 'grapheme' }), safeNumber, fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 })),
  { maxKeys: 5 },
);
const rpcMessage = fc.oneof(
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: fc.oneof(fc.integer(), fc.string()),
    method: fc.constant('tools/call'),
    params: fc.record({ name: fc.string({ minLength: 1 }), arguments: args }),
  }),
  fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constantFrom('notifications/initialized', 'notifications/progress'), params: args }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), result: args }),
);


test('valid JSON-RPC messages decode to themselves', () => {
  fc.assert(
    fc.property(rpcMessage.filter(acceptable), (m) => {
      const line = Buffer.from(JSON.stringify(m));
      const d = decodeLine(line);
      assert.deepStrictEqual(d.msg, JSON.parse(line.toString()));
    }),
    { numRuns: RUNS },
  );
});

test('random mutations of valid messages: decodeLine returns or throws WireError, never anything else', () => {
  fc.assert(
    fc.property(rpcMessage, fc.array(byteMutation, { minLength: 1, maxLength: 4 }), fc.boolean(), (m, muts, canonical) => {
      const base = Buffer.from(canonical ? canonicalize(m) : JSON.stringify(m));
      const line = mutateBytes(base, muts);
      let decoded;
      try {
        decoded = decodeLine(line);
      } catch (e) {
        if (!(e instanceof WireError)) throw new Error(`non-wire failure ${String(e)} on ${line.toString('hex')}`);
        assert.ok(typeof readableId(line) !== 'undefined'); // readableId never throws either
        return;
      }
      // Whatever is accepted re-encodes to a line that decodes to the same message.
      const again = decodeLine(Buffer.from(encodeMessage(decoded.msg).slice(0, -1)));
      assert.deepStrictEqual(again.msg, withoutNegativeZero(decoded.msg));
      // And the strict parser agrees with JSON.parse on it.
      assert.deepStrictEqual(decoded.msg, JSON.parse(line.toString('utf8')));
    }),
    { numRuns: 2000 },
  );
});
