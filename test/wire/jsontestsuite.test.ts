// JSONTestSuite (nst/JSONTestSuite) against the strict wire parser, byte for byte: every `n_`
// document is refused as malformed_json; every `y_` document is accepted with the value
// JSON.parse gives, or refused by one of the strict rules of product.md section 1, each listed
// below with its rule; every `i_` document gets the verdict recorded below, and none that is not
// valid UTF-8 is ever accepted. The transform corpus pins what the gate makes of the inputs
// other parsers disagree on. Rules: docs/decisions/001-hand-written-strict-parser.md and
// docs/decisions/010-jsontestsuite-conformance.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { parseStrict, WireError } from '../../src/wire/strict-parse.js';
import { decodeUtf8 } from '../../src/wire/utf8.js';
import { canonicalize } from '../../src/core/canonical.js';
import type { WireRefusal } from '../../src/core/refusal.js';
import type { JsonValue } from '../../src/core/json.js';
import { corpus, suiteFile } from '../helpers/jsontestsuite.js';

type Verdict = { ok: true; value: JsonValue } | { ok: false; code: WireRefusal; detail: string };

/** What the gate makes of one document's bytes: the UTF-8 decoder, then the strict parser. */
function verdict(bytes: Buffer): Verdict {
  try {
    return { ok: true, value: parseStrict(decodeUtf8(bytes)) };
  } catch (e) {
    // Anything but a WireError is a crash of the parser, and fails the test right here.
    if (!(e instanceof WireError)) throw new Error(`not a WireError: ${String(e)}`);
    return { ok: false, code: e.code, detail: e.detail };
  }
}

// The strict rules, named as the refusal details name them.
const RULES = {
  unsafeInteger: { code: 'number_out_of_range', detail: /^integer outside ±\(2\^53-1\)$/, rule: 'magnitude 2^53 or more: every such double is an integer other parsers may read differently' },
  roundTrip: { code: 'number_out_of_range', detail: /^number does not survive a round trip through a double$/, rule: 'the decimal value changes on the way through a double' },
  notFinite: { code: 'number_out_of_range', detail: /^number is not finite as a double$/, rule: 'overflows to ±Infinity' },
  underflow: { code: 'number_out_of_range', detail: /^number underflows to zero$/, rule: 'a non-zero number that becomes 0' },
  hugeExponent: { code: 'number_out_of_range', detail: /^number exponent out of range$/, rule: 'an exponent of 16 or more digits on a non-zero mantissa' },
  duplicate: { code: 'duplicate_key', detail: /^the same key appears twice in one object$/, rule: 'the same key twice: parsers keep the first or the last' },
  foldedDuplicate: { code: 'duplicate_key', detail: /^two keys in one object are equal under case folding$/, rule: 'keys equal under NFKC case folding (here NFC and NFD of é)' },
  loneHigh: { code: 'malformed_json', detail: /^lone high surrogate escape at offset \d+$/, rule: 'lone surrogate (\\uD800-\\uDBFF not followed by a low one)' },
  loneLow: { code: 'malformed_json', detail: /^lone low surrogate escape at offset \d+$/, rule: 'lone surrogate (\\uDC00-\\uDFFF on its own)' },
  invalidUtf8: { code: 'malformed_json', detail: /^invalid UTF-8$/, rule: 'not UTF-8 (invalid, overlong, encoded surrogate, UTF-16)' },
  bom: { code: 'malformed_json', detail: /^byte-order mark at the start of the line$/, rule: 'a BOM: one reader strips it, another keeps it' },
  depth: { code: 'malformed_json', detail: /^nesting deeper than 64 at offset 64$/, rule: 'nesting deeper than 64' },
} as const satisfies Record<string, { code: WireRefusal; detail: RegExp; rule: string }>;
type Rule = keyof typeof RULES;

/** The `y_` documents (valid JSON) the gate refuses, each with the strict rule that refuses it. */
const REFUSED_Y: Record<string, Rule> = {
  'y_number.json': 'unsafeInteger', // [123e65]
  'y_number_real_capital_e.json': 'unsafeInteger', // [1E22]
  'y_number_real_exponent.json': 'unsafeInteger', // [123e45]
  'y_number_real_fraction_exponent.json': 'unsafeInteger', // [123.456e78]
  'y_object_extreme_numbers.json': 'unsafeInteger', // -1.0e+28, 1.0e+28
  'y_object_duplicated_key.json': 'duplicate', // {"a":"b","a":"c"}
  'y_object_duplicated_key_and_value.json': 'duplicate', // {"a":"b","a":"b"}
};

/** What the gate does with each implementation-defined (`i_`) document. */
const I_VERDICTS: Record<string, Rule | 'accept'> = {
  'i_number_double_huge_neg_exp.json': 'underflow', // [123.456e-789]
  'i_number_huge_exp.json': 'hugeExponent', // [0.4e00669999999999999999…]
  'i_number_neg_int_huge_exp.json': 'notFinite', // [-1e+9999]
  'i_number_pos_double_huge_exp.json': 'notFinite', // [1.5e+9999]
  'i_number_real_neg_overflow.json': 'notFinite', // [-123123e100000]
  'i_number_real_pos_overflow.json': 'notFinite', // [123123e100000]
  'i_number_real_underflow.json': 'underflow', // [123e-10000000]
  'i_number_too_big_neg_int.json': 'roundTrip', // [-123123123123123123123123123123]
  'i_number_too_big_pos_int.json': 'unsafeInteger', // [100000000000000000000] is exactly 1e20 as a double
  'i_number_very_big_negative_int.json': 'roundTrip', // [-237462374673276894279832749832423479823246327846]
  'i_object_key_lone_2nd_surrogate.json': 'loneLow',
  'i_string_1st_surrogate_but_2nd_missing.json': 'loneHigh',
  'i_string_1st_valid_surrogate_2nd_invalid.json': 'loneHigh',
  'i_string_UTF-16LE_with_BOM.json': 'invalidUtf8',
  'i_string_UTF-8_invalid_sequence.json': 'invalidUtf8',
  'i_string_UTF8_surrogate_U+D800.json': 'invalidUtf8',
  'i_string_incomplete_surrogate_and_escape_valid.json': 'loneHigh',
  'i_string_incomplete_surrogate_pair.json': 'loneLow',
  'i_string_incomplete_surrogates_escape_valid.json': 'loneHigh',
  'i_string_invalid_lonely_surrogate.json': 'loneHigh',
  'i_string_invalid_surrogate.json': 'loneHigh',
  'i_string_invalid_utf-8.json': 'invalidUtf8',
  'i_string_inverted_surrogates_U+1D11E.json': 'loneLow',
  'i_string_iso_latin_1.json': 'invalidUtf8',
  'i_string_lone_second_surrogate.json': 'loneLow',
  'i_string_lone_utf8_continuation_byte.json': 'invalidUtf8',
  'i_string_not_in_unicode_range.json': 'invalidUtf8',
  'i_string_overlong_sequence_2_bytes.json': 'invalidUtf8',
  'i_string_overlong_sequence_6_bytes.json': 'invalidUtf8',
  'i_string_overlong_sequence_6_bytes_null.json': 'invalidUtf8',
  'i_string_truncated-utf-8.json': 'invalidUtf8',
  'i_string_utf16BE_no_BOM.json': 'invalidUtf8',
  'i_string_utf16LE_no_BOM.json': 'invalidUtf8',
  'i_structure_500_nested_arrays.json': 'depth',
  'i_structure_UTF-8_BOM_empty_object.json': 'bom',
};

function assertRule(name: string, v: Verdict, rule: Rule): void {
  assert.ok(!v.ok, `${name} is accepted, but the table says ${rule}`);
  assert.equal(v.code, RULES[rule].code, `${name}: ${v.detail}`);
  assert.match(v.detail, RULES[rule].detail, name);
}

const parsing = corpus('test_parsing');
const byPrefix = (p: string) => parsing.filter((f) => f.name.startsWith(p));

test('the whole test_parsing corpus is there, byte for byte (95 y_, 188 n_, 35 i_)', () => {
  assert.equal(byPrefix('y_').length, 95);
  assert.equal(byPrefix('n_').length, 188);
  assert.equal(byPrefix('i_').length, 35);
  // Byte-level cases survive: a string copy of the suite could not hold these.
  assert.ok(!isUtf8(suiteFile('test_parsing', 'n_string_invalid_utf8_after_escape.json')));
  assert.deepEqual([...suiteFile('test_parsing', 'i_structure_UTF-8_BOM_empty_object.json')], [0xef, 0xbb, 0xbf, 0x7b, 0x7d]);
});

test('every n_ document is refused as malformed_json, never a crash', () => {
  for (const f of byPrefix('n_')) {
    const v = verdict(f.bytes);
    assert.ok(!v.ok, `${f.name} is not JSON but was accepted as ${JSON.stringify(v.ok && v.value)}`);
    assert.equal(v.code, 'malformed_json', `${f.name}: ${v.detail}`);
    assert.ok(!v.detail.includes('\n'), 'the detail is one line');
  }
});

test('every y_ document is accepted with the value JSON.parse gives, or refused by its listed strict rule', () => {
  const refused: string[] = [];
  for (const f of byPrefix('y_')) {
    const v = verdict(f.bytes);
    const rule = REFUSED_Y[f.name];
    if (rule !== undefined) {
      assertRule(f.name, v, rule);
      refused.push(f.name);
      continue;
    }
    assert.ok(v.ok, `${f.name} is valid JSON, refused ${!v.ok && v.code} (${!v.ok && v.detail}) by no listed rule`);
    assert.deepStrictEqual(v.value, JSON.parse(f.bytes.toString('utf8')), f.name);
    // What the gate forwards reads back as the same value.
    assert.deepStrictEqual(parseStrict(canonicalize(v.value)), JSON.parse(canonicalize(v.value)), f.name);
  }
  assert.deepEqual(refused, Object.keys(REFUSED_Y).sort(), 'every listed y_ file exists and is refused');
});

test('every i_ document gets its recorded verdict; none that is not UTF-8 is ever accepted', () => {
  const seen: string[] = [];
  for (const f of byPrefix('i_')) {
    const expected = I_VERDICTS[f.name];
    assert.ok(expected !== undefined, `${f.name} has no recorded verdict`);
    seen.push(f.name);
    const v = verdict(f.bytes);
    if (!isUtf8(f.bytes) || f.bytes.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))) {
      assert.ok(!v.ok, `${f.name} is not plain UTF-8 JSON text but was accepted`);
      assert.equal(v.code, 'malformed_json', f.name);
    }
    if (expected === 'accept') {
      assert.ok(v.ok, f.name);
      assert.deepStrictEqual(v.value, JSON.parse(f.bytes.toString('utf8')), f.name);
    } else {
      assertRule(f.name, v, expected);
    }
  }
  assert.deepEqual(seen, Object.keys(I_VERDICTS).sort(), 'every recorded i_ file exists');
});

// test_transform: inputs parsers read differently. The gate refuses every one whose value is in
// doubt and forwards the others in one canonical form.
const TRANSFORM: Record<string, Rule | { forwards: string }> = {
  'number_-9223372036854775808.json': 'roundTrip',
  'number_-9223372036854775809.json': 'roundTrip',
  'number_1.0.json': { forwards: '[1]' },
  'number_1.000000000000000005.json': 'roundTrip',
  'number_1000000000000000.json': { forwards: '[1000000000000000]' },
  'number_10000000000000000999.json': 'roundTrip',
  'number_1e-999.json': 'underflow',
  'number_1e6.json': { forwards: '[1000000]' },
  'number_9223372036854775807.json': 'roundTrip',
  'number_9223372036854775808.json': 'roundTrip', // 2^63 is a double, but 9223372036854775808 prints as 9223372036854776000
  'object_key_nfc_nfd.json': 'foldedDuplicate',
  'object_key_nfd_nfc.json': 'foldedDuplicate',
  'object_same_key_different_values.json': 'duplicate',
  'object_same_key_same_value.json': 'duplicate',
  'object_same_key_unclear_values.json': 'duplicate',
  'string_1_escaped_invalid_codepoint.json': 'loneHigh',
  'string_1_invalid_codepoint.json': 'invalidUtf8',
  'string_2_escaped_invalid_codepoints.json': 'loneHigh',
  'string_2_invalid_codepoints.json': 'invalidUtf8',
  'string_3_escaped_invalid_codepoints.json': 'loneHigh',
  'string_3_invalid_codepoints.json': 'invalidUtf8',
  'string_with_escaped_NULL.json': { forwards: '["A\\u0000B"]' },
};

test('test_transform: each document is refused by its rule or forwarded in one canonical form', () => {
  const files = corpus('test_transform');
  assert.deepEqual(
    files.map((f) => f.name),
    Object.keys(TRANSFORM).sort(),
  );
  for (const f of files) {
    const expected = TRANSFORM[f.name]!;
    const v = verdict(f.bytes);
    if (typeof expected === 'string') {
      assertRule(f.name, v, expected);
    } else {
      assert.ok(v.ok, `${f.name}: ${!v.ok && v.detail}`);
      assert.equal(canonicalize(v.value), expected.forwards, f.name);
    }
  }
});

test('a text that is not JSON is malformed_json even when it also holds a bad number or a duplicate key', () => {
  // JSONTestSuite n_number_with_alpha_char: the number before `H` does not round-trip, but the
  // document is not JSON at all; the code must not depend on which fault comes first.
  const alpha = verdict(suiteFile('test_parsing', 'n_number_with_alpha_char.json'));
  assert.ok(!alpha.ok && alpha.code === 'malformed_json', !alpha.ok ? alpha.detail : 'accepted');
  for (const text of ['[1.8011670033376514H-308]', '{"a":1,"a":2', '{"a":1,"A":2,}', '[1e400', '[9007199254740993 x]', '{"to":1,"to":2} {}']) {
    const v = verdict(Buffer.from(text));
    assert.ok(!v.ok, text);
    assert.equal(v.code, 'malformed_json', `${text}: ${v.detail}`);
  }
  // When the text is JSON, the first semantic fault in reading order is the one reported.
  const first = verdict(Buffer.from('{"n":1e400,"a":1,"a":2}'));
  assert.ok(!first.ok && first.code === 'number_out_of_range');
  const second = verdict(Buffer.from('{"a":1,"a":2,"n":1e400}'));
  assert.ok(!second.ok && second.code === 'duplicate_key');
});
