// Inputs built to exhaust the gate: refused fast, with no stack overflow and no other error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStrict, WireError } from '../../src/wire/strict-parse.js';
import { decodeLine } from '../../src/wire/message.js';
import { assertRefuses } from './helpers.js';

test('1,000,000 open brackets or braces refuse malformed_json at depth 65, not a RangeError', () => {
  for (const text of ['['.repeat(1_000_000), '{"a":'.repeat(1_000_000), '[{"a":'.repeat(500_000), '['.repeat(1_000_000) + ']'.repeat(1_000_000)]) {
    const e = assertRefuses(() => parseStrict(text), 'malformed_json');
    assert.match(e.detail, /nesting deeper than 64/);
  }
  assertRefuses(() => decodeLine(Buffer.from('['.repeat(1_000_000))), 'malformed_json');
});

test('the parser is iterative: with the depth limit lifted, 200,000 levels parse without a stack overflow', () => {
  // A recursive parser overflows Node's call stack at roughly 10,000 levels.
  const n = 200_000;
  let v = parseStrict('['.repeat(n) + ']'.repeat(n), { maxDepth: n }) as unknown;
  let depth = 0;
  while (Array.isArray(v)) {
    depth++;
    v = v[0];
  }
  assert.equal(depth, n);
  assertRefuses(() => parseStrict('['.repeat(n) + ']'.repeat(n), { maxDepth: n - 1 }), 'malformed_json');
});

test('a custom maxDepth is honoured exactly', () => {
  assert.deepEqual(parseStrict('[[1]]', { maxDepth: 2 }), [[1]]);
  assertRefuses(() => parseStrict('[[1]]', { maxDepth: 1 }), 'malformed_json');
  assert.equal(parseStrict('1', { maxDepth: 0 }), 1);
  assertRefuses(() => parseStrict('[]', { maxDepth: 0 }), 'malformed_json');
});

test('large but legal inputs parse in linear time: a 4 MiB string, 100,000 keys, 200,000 numbers', () => {
  const s = 'x'.repeat(4 * 1024 * 1024 - 2);
  assert.equal((parseStrict(`"${s}"`) as string).length, s.length);
  const obj: Record<string, number> = {};
  for (let i = 0; i < 100_000; i++) obj['k' + i] = i;
  assert.deepEqual(parseStrict(JSON.stringify(obj)), obj);
  const arr = Array.from({ length: 200_000 }, (_, i) => i / 7);
  assert.deepEqual(parseStrict(JSON.stringify(arr)), arr);
  // A number token with a million digits is decided without quadratic work.
  const long = '0.' + '0'.repeat(1_000_000) + '1';
  assertRefuses(() => parseStrict(long), 'number_out_of_range');
  const longOk = '1' + '0'.repeat(1_000_000) + 'e-1000000';
  assert.equal(parseStrict(longOk), 1);
  assert.ok(parseStrict('"a"') !== undefined);
  assert.ok(new WireError('malformed_json', 'x') instanceof Error);
});
