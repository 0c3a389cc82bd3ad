// Line framing: lines across chunk boundaries, CRLF, empty lines, the size cap, and memory that
// stays bounded however long a line without a newline grows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LineFramer, DEFAULT_MAX_LINE_BYTES, type FrameEvent } from '../../src/wire/frame.js';

const show = (evs: FrameEvent[]): string[] => evs.map((e) => (e.kind === 'line' ? 'L:' + e.line.toString('latin1') : 'TOO_LARGE'));

test('default maximum is 4 MiB', () => {
  assert.equal(new LineFramer().maxLineBytes, 4 * 1024 * 1024);
  assert.equal(DEFAULT_MAX_LINE_BYTES, 4 * 1024 * 1024);
});

test('splits lines, joins across chunks, strips one \\r, ignores empty lines, end() flushes the last line', () => {
  const f = new LineFramer();
  const evs = [
    ...f.push(Buffer.from('{"a":1}\n{"b"')),
    ...f.push(Buffer.from(':2}\r\n\n\r\n')),
    ...f.push(Buffer.from('x\r\r\n')),
    ...f.push(Buffer.from('last')),
  ];
  assert.deepEqual(show(evs), ['L:{"a":1}', 'L:{"b":2}', 'L:x\r']);
  assert.deepEqual(show(f.end()), ['L:last']);
  assert.deepEqual(show(f.end()), []);
});

test('blank lines (only spaces, tabs, CRs) are skipped like empty ones; a line with anything else is a line', () => {
  const f = new LineFramer();
  assert.deepEqual(show(f.push(Buffer.from('\n \n\t\r\n \t \r\n\r\r\n x\n'))), ['L: x']);
});

test('a line of exactly the maximum passes; one byte more is reported once and skipped to the next newline', () => {
  const f = new LineFramer({ maxLineBytes: 10 });
  assert.deepEqual(show(f.push(Buffer.from('0123456789\n'))), ['L:0123456789']);
  const evs = [...f.push(Buffer.from('0123456789A')), ...f.push(Buffer.from('BCDEF')), ...f.push(Buffer.from('GH\nnext\n'))];
  assert.deepEqual(show(evs), ['TOO_LARGE', 'L:next']);
  // The \r counts toward the limit: it is part of the line until the \n arrives.
  assert.deepEqual(show(f.push(Buffer.from('0123456789\r\nok\n'))), ['TOO_LARGE', 'L:ok']);
  // An oversize final line without newline: reported while it streams, nothing at end().
  assert.deepEqual(show(f.push(Buffer.from('x'.repeat(11)))), ['TOO_LARGE']);
  assert.deepEqual(show(f.end()), []);
});

test('a 50 MiB line without newline is refused once, buffered bytes never exceed the maximum, the next line passes', () => {
  const max = DEFAULT_MAX_LINE_BYTES;
  const f = new LineFramer();
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let tooLarge = 0;
  let lines = 0;
  let peak = 0;
  for (let sent = 0; sent < 50 * 1024 * 1024; sent += chunk.length) {
    for (const e of f.push(chunk)) e.kind === 'tooLarge' ? tooLarge++ : lines++;
    peak = Math.max(peak, f.bufferedBytes);
    assert.ok(f.bufferedBytes <= max);
  }
  assert.equal(tooLarge, 1);
  assert.equal(lines, 0);
  assert.ok(peak <= max);
  assert.deepEqual(show(f.push(Buffer.from('\n{"jsonrpc":"2.0"}\n'))), ['L:{"jsonrpc":"2.0"}']);
  assert.equal(f.bufferedBytes, 0);
});

test('a 50 MiB line in a single chunk is refused without being buffered', () => {
  const f = new LineFramer();
  const big = Buffer.alloc(50 * 1024 * 1024 + 3, 0x61);
  big[big.length - 3] = 0x0a;
  big[big.length - 2] = 0x7b;
  big[big.length - 1] = 0x7d;
  assert.deepEqual(show(f.push(big)), ['TOO_LARGE']);
  assert.equal(f.bufferedBytes, 2);
  assert.deepEqual(show(f.end()), ['L:{}']);
});

/** What the framer must produce for the whole input, computed the obvious way. */
function model(input: Buffer, max: number): string[] {
  const out: string[] = [];
  const segs = input.toString('latin1').split('\n');
  for (const seg of segs) {
    if (seg.length > max) out.push('TOO_LARGE');
    else {
      const line = seg.endsWith('\r') ? seg.slice(0, -1) : seg;
      if (!/^[ \t\r]*$/.test(line)) out.push('L:' + line); // blank lines carry nothing
    }
  }
  return out;
}

test('any input cut into any chunks yields the same events as the whole-input model, within the memory bound', () => {
  const bytes = fc.array(fc.constantFrom(0x0a, 0x0d, 0x61, 0x62, 0x7b, 0xff), { maxLength: 200 });
  fc.assert(
    fc.property(bytes, fc.array(fc.nat(200), { maxLength: 10 }), fc.integer({ min: 1, max: 12 }), (bs, cuts, max) => {
      const input = Buffer.from(bs);
      const points = [...new Set(cuts.map((c) => c % (input.length + 1)))].sort((a, b) => a - b);
      const f = new LineFramer({ maxLineBytes: max });
      const evs: FrameEvent[] = [];
      let prev = 0;
      for (const p of [...points, input.length]) {
        evs.push(...f.push(input.subarray(prev, p)));
        assert.ok(f.bufferedBytes <= max);
        prev = p;
      }
      evs.push(...f.end());
      assert.deepEqual(show(evs), model(input, max));
    }),
    { numRuns: 1000 },
  );
});

test('lines are copies: later chunks and reuse of the input buffer do not change them', () => {
  const f = new LineFramer();
  const chunk = Buffer.from('abc');
  f.push(chunk);
  chunk.fill(0x7a);
  const evs = f.push(Buffer.from('\n'));
  assert.deepEqual(show(evs), ['L:abc']);
});
