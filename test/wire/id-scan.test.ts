// The id of a refused line (product.md section 1): read for sure or not at all. A host waits
// for the answer to its id, so the scan must find it also at the end of a huge line or after
// content the strict parser refuses; and it must never name an id the line does not carry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { scanId, IdScanner } from '../../src/wire/id-scan.js';
import { LineFramer, type FrameEvent } from '../../src/wire/frame.js';
import { parseStrict } from '../../src/wire/strict-parse.js';

const CASES: [string, unknown][] = [
  ['{"jsonrpc":"2.0","id":7,"method":"x"}', 7],
  ['{"jsonrpc":"2.0","method":"x","params":{"id":1,"a":[{"id":2}]},"id":"abc"}', 'abc'],
  ['  {"id" : -3 }', -3],
  ['{"\\u0069d":5}', 5], // an escaped key is still `id`
  ['{"id":"a\\"b"}', 'a"b'],
  ['{"params":{"s":"}\\"{[","n":[1,[2,{"x":"]"}]]},"id":9}', 9], // brackets inside strings
  ['{"a":{"to":"x","To":"y"},"id":8}', 8], // content the strict parser refuses
  ['{"a":9007199254740993,"id":10}', 10],
  ['{"jsonrpc":"2.0","id":4,"method":"ping"} {"id":5}', 4], // the first object's own id
  // Unreadable for sure → null.
  ['{"id":1,"id":2}', null],
  ['{"id":1,"ID":2}', null], // two ids under case folding
  ['{"id":1.5}', null],
  ['{"id":9007199254740993}', null],
  ['{"id":null}', null],
  ['{"id":{"a":1}}', null],
  ['{"id":true}', null],
  ['{"id":"\\ud800"}', null], // a lone surrogate is not echoed
  ['[{"id":1}]', null],
  ['{"jsonrpc":"2.0","id":1,"method":"x",CANARY', 1], // broken after the id: the id stands
  ['{"id":1,"params":{"a":1}', 1], // never closed (an unclosed nested document)
  ['{"id":1 "x":2}', 1],
  ['{"method":"x",CANARY,"id":1}', null], // broken before the id
  ['{"id":12x}', null],
  ['{"id":1', null], // the value itself never ended
  ['"id"', null],
  ['', null],
  [`{"id":"${'x'.repeat(2000)}"}`, null], // too long to echo back
];

test('the scan reads an id only when the top level names exactly one, as a string or integer', () => {
  for (const [line, id] of CASES) assert.deepEqual(scanId(Buffer.from(line)), id, line);
});

test('the id at the end of a line larger than the frame limit is recovered, fed in chunks, in bounded memory', () => {
  const max = 1024 * 1024;
  const f = new LineFramer({ maxLineBytes: max, recoverIds: true });
  const head = Buffer.from('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write_file","arguments":{"content":"');
  const tail = Buffer.from('"}},"id":42}\nnext\n');
  const events: FrameEvent[] = [...f.push(head)];
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (let sent = 0; sent < 5 * max; sent += chunk.length) {
    events.push(...f.push(chunk));
    assert.ok(f.bufferedBytes <= max);
  }
  events.push(...f.push(tail));
  assert.deepEqual(
    events.map((e) => (e.kind === 'line' ? e.line.toString() : e.kind === 'tooLargeEnd' ? `END:${e.id}` : 'TOO_LARGE')),
    ['TOO_LARGE', 'END:42', 'next'],
  );
});

test('without recoverIds the framer reports as before', () => {
  const f = new LineFramer({ maxLineBytes: 10 });
  assert.deepEqual(f.push(Buffer.from('{"id":1,"a":"xxxxxxxx"}\n')).map((e) => e.kind), ['tooLarge']);
});

test('agrees with the strict parser on every object it accepts, however it is chunked', () => {
  const id = fc.oneof(fc.string({ maxLength: 20 }), fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }));
  const member = fc.tuple(fc.string({ maxLength: 8 }).filter((k) => k.toLowerCase() !== 'id'), fc.jsonValue({ maxDepth: 3 }));
  fc.assert(
    fc.property(fc.array(member, { maxLength: 5 }), id, fc.nat(6), fc.array(fc.nat(40), { maxLength: 6 }), (members, idv, at, cuts) => {
      const obj: [string, unknown][] = members.map(([k, v]) => [k, v]);
      obj.splice(Math.min(at, obj.length), 0, ['id', idv]);
      const text = '{' + obj.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',') + '}';
      let strict: unknown;
      try {
        strict = (parseStrict(text) as { id: unknown }).id;
      } catch {
        return; // duplicate keys among the random members: the strict parser decides nothing here
      }
      const bytes = Buffer.from(text);
      const s = new IdScanner();
      let pos = 0;
      for (const c of cuts) {
        s.push(bytes.subarray(pos, Math.min(bytes.length, pos + c)));
        pos = Math.min(bytes.length, pos + c);
      }
      s.push(bytes.subarray(pos));
      assert.deepEqual(s.result(), strict);
    }),
    { numRuns: 2000 },
  );
});
