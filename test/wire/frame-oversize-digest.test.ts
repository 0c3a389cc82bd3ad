// An oversize line is never held, but its record names it: the framer hashes it as it streams
// by, and its digest is the one the same bytes would have as a complete line (without `\n` and
// one trailing `\r`), however the chunks fall, also across a `\r` and at the stream's end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineFramer, type FrameEvent } from '../../src/wire/frame.js';
import { digestBytes } from '../../src/core/digest.js';

const MAX = 64;

function framed(chunks: Buffer[], end = false): FrameEvent[] {
  const f = new LineFramer({ maxLineBytes: MAX, recoverIds: true });
  const events = chunks.flatMap((c) => f.push(c));
  if (end) events.push(...f.end());
  assert.ok(f.bufferedBytes <= MAX, 'never more than the maximum held');
  return events;
}

const ends = (events: FrameEvent[]) => events.filter((e): e is Extract<FrameEvent, { kind: 'tooLargeEnd' }> => e.kind === 'tooLargeEnd');

/** Every way to cut `bytes` into two chunks, and into chunks of one byte. */
function cuts(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [[bytes], [...bytes].map((b) => Buffer.from([b]))];
  for (let i = 1; i < bytes.length; i++) out.push([bytes.subarray(0, i), bytes.subarray(i)]);
  return out;
}

test('the digest of an oversize line is that of its bytes, wherever the chunks are cut', () => {
  const line = Buffer.from(`{"jsonrpc":"2.0","method":"tools/call","params":{"x":"${'a\r'.repeat(40)}"},"id":7}`);
  for (const ending of ['\n', '\r\n', '\r\r\n']) {
    const bytes = Buffer.concat([line, Buffer.from(ending)]);
    const expected = digestBytes(ending === '\r\r\n' ? Buffer.concat([line, Buffer.from('\r')]) : line);
    for (const chunks of cuts(bytes)) {
      const [e] = ends(framed([...chunks, Buffer.from('{"id":8}\n')]));
      assert.equal(e?.digest, expected, `ending ${JSON.stringify(ending)}, chunks ${chunks.map((c) => c.length)}`);
      assert.equal(e?.id, 7);
    }
  }
});

test('an oversize line cut by the stream end has the digest of the bytes that came', () => {
  const line = Buffer.from(`{"id":"x","pad":"${'b'.repeat(100)}"`);
  for (const chunks of cuts(line)) assert.equal(ends(framed(chunks, true))[0]?.digest, digestBytes(line));
});

test('two oversize lines have their own digests; a line within the limit is passed whole', () => {
  const a = Buffer.from('A'.repeat(MAX + 1));
  const b = Buffer.from('B'.repeat(MAX * 3));
  const events = framed([Buffer.concat([a, Buffer.from('\n{"ok":1}\n'), b, Buffer.from('\n')])]);
  assert.deepEqual(ends(events).map((e) => e.digest), [digestBytes(a), digestBytes(b)]);
  assert.deepEqual(events.filter((e) => e.kind === 'line').map((e) => (e as { line: Buffer }).line.toString()), ['{"ok":1}']);
});
