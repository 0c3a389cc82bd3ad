// Seeded fuzzing of the wire: the strict parser, the line framer and the JSON-RPC decoder. Each
// property runs twice, bounded by a number of runs (never by time): once with a fixed seed, so a
// run is repeatable, and once with a fresh seed, printed in the test's name and in any failure
// (`FUZZ_SEED=<seed>` reproduces it). The oracles are independent of the parser:
// JSON.parse for values, a BigInt comparison for numbers, a model of the document for the
// expected verdict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseStrict, WireError } from '../../src/wire/strict-parse.js';
import { decodeLine, encodeMessage, readableId } from '../../src/wire/message.js';
import { LineFramer } from '../../src/wire/frame.js';
import { canonicalize } from '../../src/core/canonical.js';
import type { JsonValue } from '../../src/core/json.js';
import { byteMutation, exactEqual, mutateBytes } from '../helpers/wire-gen.js';

const FIXED_SEED = 0x5eedc10a;
/** FUZZ_SCALE multiplies every property's number of runs (CI runs the default, 1). */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const freshSeed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0;

/** Registers a property with the fixed seed and with a fresh one; `runs` is scaled by FUZZ_SCALE. */
function fuzz<T>(name: string, arb: fc.Arbitrary<T>, check: (t: T) => void, runs: number): void {
  const numRuns = Math.max(1, Math.round(runs * SCALE));
  for (const seed of [FIXED_SEED, freshSeed]) {
    test(`${name} [FUZZ_SEED=${seed}, ${numRuns} runs]`, () => {
      try {
        fc.assert(fc.property(arb, check), { seed, numRuns });
      } catch (e) {
        if (e instanceof Error) e.message = `reproduce with FUZZ_SEED=${seed} FUZZ_SCALE=${SCALE}: ${e.message}`;
        throw e;
      }
    });
  }
}

/** The parser's verdict; a throw that is not a WireError fails the property at once. */
function verdict(run: () => JsonValue): { ok: true; value: JsonValue } | { ok: false; code: string } {
  try {
    return { ok: true, value: run() };
  } catch (e) {
    if (!(e instanceof WireError)) throw new Error(`a throw other than WireError: ${String(e)}`);
    assert.ok(!e.detail.includes('\n'), 'a refusal detail is one line');
    return { ok: false, code: e.code };
  }
}

// ---------------------------------------------------------------------------------------------
// A model of JSON documents, rendered to text, with the verdict the contract gives each one.

type Node =
  | { t: 'lit'; text: 'null' | 'true' | 'false' }
  | { t: 'num'; text: string }
  | { t: 'str'; s: Str }
  | { t: 'arr'; items: Node[] }
  | { t: 'obj'; members: [Key, Node][] };
/** A string as pieces: raw characters, short escapes, or \uXXXX escapes of one code unit each. */
type Str = ({ raw: string } | { esc: string } | { u: number; upper: boolean })[];
/** A key: its spelling and the class of keys it collides with (an independent, hand-made fold). */
type Key = { s: Str; cls: string };

const ws = fc.constantFrom('', '', '', ' ', '\t', '\n', '\r\n', ' \r \t\n ');

const codeUnit = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.integer({ min: 0, max: 0x1f }),
  fc.integer({ min: 0xd800, max: 0xdbff }), // high surrogate
  fc.integer({ min: 0xdc00, max: 0xdfff }), // low surrogate
  fc.integer({ min: 0x80, max: 0xffff }),
);
const piece: fc.Arbitrary<Str[number]> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', maxLength: 4 }).map((s) => ({ raw: s.replace(/["\\\u0000-\u001f]/g, '') })) },
  { weight: 1, arbitrary: fc.constantFrom('"', '\\', '/', 'b', 'f', 'n', 'r', 't').map((esc) => ({ esc })) },
  { weight: 1, arbitrary: fc.constantFrom('\t', '\n', '\u0000', '\u001f', '\u007f').map((raw) => ({ raw })) }, // raw controls: no JSON (DEL is)
  { weight: 2, arbitrary: fc.tuple(codeUnit, fc.boolean()).map(([u, upper]) => ({ u, upper })) },
  // A well-formed pair written as two escapes.
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 0xd800, max: 0xdbff }), fc.integer({ min: 0xdc00, max: 0xdfff })).map(([h, l]) => ({ raw: String.fromCharCode(h, l) })) },
);
const str = fc.array(piece, { maxLength: 5 });

// Keys whose collisions are known without the parser's fold: case, ß/SS/ẞ, the Kelvin sign,
// NFC/NFD, fullwidth letters, an invisible character, an escaped letter.
const POOL: [Str, string][] = [
  [[{ raw: 'to' }], 'to'], [[{ raw: 'To' }], 'to'], [[{ raw: 'TO' }], 'to'], [[{ u: 0x74, upper: false }, { raw: 'o' }], 'to'],
  [[{ raw: 'ｔｏ' }], 'to'], [[{ raw: 't\u200bo' }], 'to'],
  [[{ raw: 'ss' }], 'ss'], [[{ raw: 'ß' }], 'ss'], [[{ raw: 'SS' }], 'ss'], [[{ raw: 'ẞ' }], 'ss'],
  [[{ raw: 'k' }], 'k'], [[{ raw: '\u212a' }], 'k'], [[{ raw: 'é' }], 'é'], [[{ raw: 'e\u0301' }], 'é'], [[{ u: 0xe9, upper: true }], 'é'],
  [[{ raw: '__proto__' }], '__proto__'], [[{ raw: 'a' }], 'a'], [[{ raw: 'b' }], 'b'], [[{ raw: 'id' }], 'id'], [[{ raw: 'Id' }], 'id'], [[{ raw: '' }], ''],
];
const key: fc.Arbitrary<Key> = fc.oneof(
  fc.constantFrom(...POOL).map(([s, cls]) => ({ s, cls })),
  // Arbitrary ASCII keys, none of which can fold onto a pool key.
  fc.stringMatching(/^x_[a-z0-9]{0,4}$/).map((k) => ({ s: [{ raw: k }], cls: k })),
);

const numberToken = fc.oneof(
  fc.tuple(
    fc.constantFrom('', '-'),
    fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9][0-9]{0,24}$/)),
    fc.option(fc.stringMatching(/^[0-9]{1,24}$/), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.oneof(fc.integer({ min: 0, max: 30 }).map(String), fc.integer({ min: 0, max: 400 }).map(String), fc.stringMatching(/^0{0,3}[1-9][0-9]{15,20}$/))), { nil: undefined }),
  ).map(([sign, int, frac, exp]) => sign + int + (frac !== undefined ? '.' + frac : '') + (exp ? exp.join('') : '')),
  fc.tuple(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean()).map(([d, exp]) => (exp ? d.toExponential() : String(d))),
  fc.constantFrom('9007199254740991', '-9007199254740991', '9007199254740992', '9007199254740993', '0.1', '0.10000000000000001', '5e-324', '2e-324', '1e400', '-0', '0e99999999999999999999', '1.7976931348623157e308', '1.7976931348623159e308'),
);

const { node } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('null', 'true', 'false').map((text) => ({ t: 'lit', text }) as Node),
    numberToken.map((text) => ({ t: 'num', text }) as Node),
    str.map((s) => ({ t: 'str', s }) as Node),
    fc.array(tie('node'), { maxLength: 4 }).map((items) => ({ t: 'arr', items }) as Node),
    fc.array(fc.tuple(key, tie('node')), { maxLength: 4 }).map((members) => ({ t: 'obj', members }) as Node),
  ),
}));
// Sometimes wrapped around the 64-level limit.
const doc = fc.tuple(node, fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 58, max: 70 }) }), fc.boolean()).map(([n, wraps, objects]) => {
  let out = n;
  for (let k = 0; k < wraps; k++) out = objects ? { t: 'obj', members: [[{ s: [{ raw: 'x_' }], cls: 'x_' }, out]] } : { t: 'arr', items: [out] };
  return out;
});

const hex = (u: number, upper: boolean) => {
  const h = u.toString(16).padStart(4, '0');
  return upper ? h.toUpperCase() : h;
};
function renderStr(s: Str): string {
  return '"' + s.map((p) => ('raw' in p ? p.raw : 'esc' in p ? '\\' + p.esc : '\\u' + hex(p.u, p.upper))).join('') + '"';
}
function render(n: Node, w: () => string): string {
  switch (n.t) {
    case 'lit':
    case 'num':
      return n.text;
    case 'str':
      return renderStr(n.s);
    case 'arr':
      return '[' + w() + n.items.map((x) => render(x, w) + w()).join(',' + w()) + ']';
    case 'obj':
      return '{' + w() + n.members.map(([k, v]) => renderStr(k.s) + w() + ':' + w() + render(v, w) + w()).join(',' + w()) + '}';
  }
}

/** The code units of a string, to find lone surrogates without the parser. */
function units(s: Str): number[] {
  const out: number[] = [];
  for (const p of s) {
    if ('raw' in p) for (let i = 0; i < p.raw.length; i++) out.push(p.raw.charCodeAt(i));
    else if ('esc' in p) out.push(0x41);
    else out.push(p.u);
  }
  return out;
}
function hasLoneSurrogate(s: Str): boolean {
  const u = units(s);
  for (let i = 0; i < u.length; i++) {
    if (u[i]! >= 0xd800 && u[i]! <= 0xdbff) {
      if (u[i + 1]! >= 0xdc00 && u[i + 1]! <= 0xdfff) i++;
      else return true;
    } else if (u[i]! >= 0xdc00 && u[i]! <= 0xdfff) return true;
  }
  return false;
}
/** A raw control character in a string is no JSON (only escapes may carry them). */
const hasRawControl = (s: Str): boolean => s.some((p) => 'raw' in p && /[\u0000-\u001f]/.test(p.raw));

/** The contract's number rule, decided without the parser. */
function numberOk(t: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?)(\d+))?$/.exec(t)!;
  if (/^0*$/.test(m[1]! + (m[2] ?? ''))) return true; // a zero in any spelling
  const v = Number(t);
  if (!Number.isFinite(v) || v === 0) return false;
  if (Number.isInteger(v) && Math.abs(v) > Number.MAX_SAFE_INTEGER) return false;
  if ((m[4] ?? '').replace(/^0+/, '').length > 6) return false; // |exponent| ≥ 10^6 with few digits: not finite or zero
  return exactEqual(t.replace(/^-/, ''), String(Math.abs(v)));
}

/** The verdict product.md section 1 gives a modelled document. */
function expected(root: Node): string | null {
  let malformed = false;
  let first: string | null = null;
  const walk = (n: Node, depth: number): void => {
    if (n.t === 'arr' || n.t === 'obj') {
      if (depth + 1 > 64) malformed = true;
    }
    if (n.t === 'num' && !numberOk(n.text)) first ??= 'number_out_of_range';
    if (n.t === 'str' && (hasLoneSurrogate(n.s) || hasRawControl(n.s))) malformed = true;
    if (n.t === 'arr') for (const x of n.items) walk(x, depth + 1);
    if (n.t === 'obj') {
      const seen = new Set<string>();
      for (const [k, v] of n.members) {
        if (hasLoneSurrogate(k.s) || hasRawControl(k.s)) malformed = true;
        if (seen.has(k.cls)) first ??= 'duplicate_key';
        seen.add(k.cls);
        walk(v, depth + 1);
      }
    }
  };
  walk(root, 0);
  return malformed ? 'malformed_json' : first;
}

fuzz(
  'modelled documents: the verdict is the contract\'s, and an accepted value equals JSON.parse and survives canonical form',
  fc.tuple(doc, fc.array(ws, { minLength: 1, maxLength: 8 })),
  ([n, spaces]) => {
    let k = 0;
    const text = render(n, () => spaces[k++ % spaces.length]!);
    const want = expected(n);
    const got = verdict(() => parseStrict(text));
    if (want === null) {
      assert.ok(got.ok, `refused ${!got.ok && got.code}: ${text.slice(0, 300)}`);
      assert.deepStrictEqual(got.value, JSON.parse(text));
      assert.deepStrictEqual(parseStrict(canonicalize(got.value)), JSON.parse(canonicalize(got.value)));
    } else {
      assert.ok(!got.ok, `accepted, expected ${want}: ${text.slice(0, 300)}`);
      assert.equal(got.code, want, text.slice(0, 300));
    }
  },
  1500,
);

// ---------------------------------------------------------------------------------------------
// Differential against JSON.parse on token soup: whatever the strict parser accepts, JSON.parse
// accepts with the same value; whatever JSON.parse accepts and the strict parser refuses has a
// strict rule that explains it.

const BAD_NUMBERS = ['1e400', '9007199254740993', '0.10000000000000001', '-1e-400', '123e65', '1.0000000000000000001'];
const TOKENS = [
  '{', '}', '[', ']', ',', ':', '"a"', '"A"', '"b"', '"\\ud800"', '"\\udc00"', '"\\ud83d\\ude00"', '"\\u00"', '"x\ty"', '"\\q"', '"é"', '"',
  '0', '-0', '1', '-', '1.5', '01', '1.', '.5', '1e', '2E-3', '9007199254740991', ...BAD_NUMBERS, 'true', 'false', 'null', 'nul', 'True', 'NaN', 'Infinity', '/*c*/', '\u00a0', '\ufeff', "'a'",
];
const soup = fc.array(fc.constantFrom(...TOKENS), { minLength: 1, maxLength: 14 }).map((ts) => ts.join(' '));

function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

fuzz(
  'token soup: strict ⊆ JSON.parse with equal values; each extra refusal is a strict rule',
  soup,
  (text) => {
    const got = verdict(() => parseStrict(text));
    let plain: { ok: true; value: unknown } | { ok: false };
    try {
      plain = { ok: true, value: JSON.parse(text) };
    } catch {
      plain = { ok: false };
    }
    if (got.ok) {
      assert.ok(plain.ok, `strict accepted what JSON.parse refuses: ${text}`);
      assert.deepStrictEqual(got.value, plain.value, text);
      return;
    }
    if (!plain.ok) {
      assert.equal(got.code, 'malformed_json', `not JSON, refused as ${got.code}: ${text}`);
      return;
    }
    const tokens = text.split(' ');
    if (got.code === 'number_out_of_range') assert.ok(tokens.some((t) => BAD_NUMBERS.includes(t)), text);
    else if (got.code === 'duplicate_key') {
      const strings = tokens.filter((t) => t.startsWith('"')).map((t) => t.toLowerCase());
      assert.ok(strings.some((t, k) => strings.indexOf(t) !== k), text);
    }
    else {
      assert.equal(got.code, 'malformed_json', text);
      assert.ok(/\\ud800|\\udc00/.test(text) || depthOf(plain.value) > 64, `JSON refused as malformed_json with no strict rule: ${text}`);
    }
  },
  3000,
);

// ---------------------------------------------------------------------------------------------
// Arbitrary bytes: never anything but a WireError; anything accepted is what JSON.parse reads.

fuzz(
  'arbitrary bytes through decodeLine: a message or a WireError, and an accepted one equals JSON.parse',
  fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.string({ unit: 'binary', maxLength: 64 }).map((s) => new Uint8Array(Buffer.from(s, 'utf8'))),
    fc.tuple(fc.constantFrom('{"jsonrpc":"2.0","id":1,"method":"', '{"jsonrpc":"2.0","method":"m","params":', '{"jsonrpc":"2.0","id":"'), fc.uint8Array({ maxLength: 24 })).map(([p, tail]) => new Uint8Array(Buffer.concat([Buffer.from(p), tail]))),
  ),
  (bytes) => {
    const line = Buffer.from(bytes);
    let decoded;
    try {
      decoded = decodeLine(line);
    } catch (e) {
      if (!(e instanceof WireError)) throw new Error(`a throw other than WireError: ${String(e)}`);
      const id = readableId(line); // never throws either
      assert.ok(id === null || typeof id === 'string' || Number.isSafeInteger(id));
      return;
    }
    assert.deepStrictEqual(decoded.msg, JSON.parse(line.toString('utf8')));
  },
  3000,
);

// ---------------------------------------------------------------------------------------------
// The framer with the decoder: a stream of messages cut at arbitrary points (inside multi-byte
// characters too) gives back the same messages; lines past the cap are reported in their place.

// Graphemes, and sometimes U+2028, é and an astral character: multi-byte sequences to cut through.
const text = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s + [...'\u2028\u00e9\u{1f600}'].slice(0, s.length % 4).join(''));
const message = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer({ min: 0, max: 1e6 }), method: fc.constant('tools/call'), params: fc.record({ name: fc.constantFrom('echo', 'write_file'), arguments: fc.record({ path: text, content: text }) }) }),
  fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constant('notifications/progress'), params: fc.record({ progress: fc.nat(100), message: text }) }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.string({ maxLength: 6 }), result: fc.record({ content: fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 3 }) }) }),
);

fuzz(
  'framer: any chunking of a message stream yields the messages sent, and only lines past the cap are refused',
  fc.tuple(fc.array(fc.tuple(message, fc.constantFrom('\n', '\r\n', '\n\n', '\r\n\r\n')), { minLength: 1, maxLength: 12 }), fc.array(fc.nat(4000), { maxLength: 20 }), fc.integer({ min: 60, max: 400 })),
  ([msgs, cuts, max]) => {
    const lines = msgs.map(([m]) => Buffer.from(JSON.stringify(m)));
    const stream = Buffer.concat(msgs.flatMap(([, sep], k) => [lines[k]!, Buffer.from(sep)]));
    const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
    const framer = new LineFramer({ maxLineBytes: max });
    const out: (JsonValue | 'too large')[] = [];
    let prev = 0;
    for (const p of [...points, stream.length]) {
      for (const ev of framer.push(stream.subarray(prev, p))) out.push(ev.kind === 'line' ? decodeLine(ev.line, { maxLineBytes: max }).msg : 'too large');
      assert.ok(framer.bufferedBytes <= max, 'never more than one capped line held');
      prev = p;
    }
    for (const ev of framer.end()) out.push(ev.kind === 'line' ? decodeLine(ev.line).msg : 'too large');
    // A line's size as the framer counts it: the bytes before `\n`, a `\r` included.
    const want = msgs.map(([m, sep], k) => (lines[k]!.length + (sep.startsWith('\r') ? 1 : 0) > max ? 'too large' : JSON.parse(JSON.stringify(m))));
    assert.deepStrictEqual(out, want);
  },
  1000,
);

// ---------------------------------------------------------------------------------------------
// Mutations of valid JSON-RPC messages whose verdict is known: each smuggling trick a host's
// model could try gets its own code, wherever in the message it is placed.

const safeArg = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 10 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }), fc.boolean(), fc.constant(null));
const argsDict = fc.dictionary(fc.stringMatching(/^[a-z][a-z_]{0,7}$/), safeArg, { minKeys: 1, maxKeys: 4 });
const call = fc.record({ jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.integer({ min: -1e9, max: 1e9 }), fc.string({ maxLength: 8 })), method: fc.constant('tools/call'), params: fc.record({ name: fc.constantFrom('send_email', 'write_file'), arguments: argsDict }) });

type Trick = { name: string; code: string; apply: (m: any, line: string) => string };
const MARK = '"__mark__"';
const withMark = (m: any): string => JSON.stringify({ ...m, params: { ...m.params, arguments: { ...m.params.arguments, mark: '__mark__' } } });
const TRICKS: Trick[] = [
  { name: 'duplicate top-level id', code: 'duplicate_key', apply: (m, l) => `{"id":${JSON.stringify(m.id)},` + l.slice(1) },
  { name: 'case-folded duplicate argument', code: 'duplicate_key', apply: (m) => { const k = Object.keys(m.params.arguments)[0]!; return withMark(m).replace(`"mark":${MARK}`, `"mark":0,${JSON.stringify(k.toUpperCase())}:1`); } },
  { name: 'exact duplicate argument', code: 'duplicate_key', apply: (m) => { const k = Object.keys(m.params.arguments)[0]!; return withMark(m).replace(`"mark":${MARK}`, `"mark":0,${JSON.stringify(k)}:1`); } },
  { name: 'integer past 2^53', code: 'number_out_of_range', apply: (m) => withMark(m).replace(MARK, '9007199254740993') },
  { name: 'number that overflows', code: 'number_out_of_range', apply: (m) => withMark(m).replace(MARK, '1e309') },
  { name: 'number that does not round-trip', code: 'number_out_of_range', apply: (m) => withMark(m).replace(MARK, '0.30000000000000000001') },
  { name: 'lone surrogate', code: 'malformed_json', apply: (m) => withMark(m).replace(MARK, '"x\\udbff"') },
  { name: 'nesting past 64', code: 'malformed_json', apply: (m) => withMark(m).replace(MARK, '['.repeat(62) + ']'.repeat(62)) },
  { name: 'trailing data', code: 'malformed_json', apply: (_m, l) => l + ' {}' },
  { name: 'a byte-order mark', code: 'malformed_json', apply: (_m, l) => '\ufeff' + l },
  { name: 'a batch', code: 'batch_not_allowed', apply: (_m, l) => `[${l}]` },
  { name: 'JSON-RPC 1.0', code: 'invalid_request', apply: (_m, l) => l.replace('"jsonrpc":"2.0"', '"jsonrpc":"1.0"') },
  { name: 'an extra top-level member', code: 'invalid_request', apply: (_m, l) => l.slice(0, -1) + ',"Method2":"x"}' },
  { name: 'a request that is also a response', code: 'invalid_request', apply: (_m, l) => l.slice(0, -1) + ',"result":{}}' },
  { name: 'a fractional id', code: 'invalid_request', apply: (m, l) => l.replace(`"id":${JSON.stringify(m.id)}`, '"id":1.5') },
];

fuzz(
  'known tricks in valid messages are refused with their code; the untouched message decodes to itself',
  fc.tuple(call, fc.constantFrom(...TRICKS)),
  ([m, trick]) => {
    const line = JSON.stringify(m);
    assert.deepStrictEqual(decodeLine(Buffer.from(line)).msg, JSON.parse(line));
    const bad = Buffer.from(trick.apply(m, line));
    const got = verdict(() => decodeLine(bad).msg);
    assert.ok(!got.ok, `${trick.name} was accepted: ${bad.toString()}`);
    assert.equal(got.code, trick.code, `${trick.name}: ${bad.toString()}`);
  },
  1500,
);


fuzz(
  'random mutations of valid messages: a WireError or a message equal to JSON.parse that re-encodes to itself',
  fc.tuple(call, fc.array(byteMutation, { minLength: 1, maxLength: 5 }), fc.boolean()),
  ([m, muts, canonical]) => {
    const line = mutateBytes(Buffer.from(canonical ? canonicalize(m) : JSON.stringify(m)), muts);
    let decoded;
    try {
      decoded = decodeLine(line);
    } catch (e) {
      if (!(e instanceof WireError)) throw new Error(`a throw other than WireError: ${String(e)} on ${line.toString('hex')}`);
      readableId(line);
      return;
    }
    assert.deepStrictEqual(decoded.msg, JSON.parse(line.toString('utf8')));
    const again = decodeLine(Buffer.from(encodeMessage(decoded.msg).slice(0, -1)));
    assert.equal(canonicalize(again.msg), canonicalize(decoded.msg));
    if (decoded.kind === 'request') assert.ok('id' in decoded.msg && typeof decoded.msg.method === 'string');
    if (decoded.kind === 'notification') assert.ok(!('id' in decoded.msg));
  },
  3000,
);
