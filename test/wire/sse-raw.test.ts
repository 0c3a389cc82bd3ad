// The byte-keeping SSE reader against the strict one: however a stream is cut into chunks
// (LF, CRLF and CR line ends, comments, multi-line data, a CRLF split across chunks), the
// events' bytes put together are the stream exactly, and their meaning is what the strict
// reader reads from the whole stream at once. Its bound refuses an event that never ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RawSseReader } from '../../src/wire/sse-raw.js';
import { SseError, SseParser } from '../../src/wire/sse.js';

const line = fc.constantFrom('\n', '\r\n', '\r');
const text = fc.string({ maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, ''));
const field = fc.oneof(
  text.map((t) => `data: ${t}`),
  text.map((t) => `data:${t}`),
  fc.constantFrom('event: message_start', 'event: ping', ': keep-alive', 'id: 7', 'retry: 1000'),
);
const event = fc.tuple(fc.array(fc.tuple(field, line), { minLength: 1, maxLength: 4 }), line).map(([fields, end]) => {
  const body = fields.map(([f, l]) => f + l).join('');
  // A CR then an LF would be one CRLF, not a line end and a blank line.
  return body + (body.endsWith('\r') && end === '\n' ? '\r\n' : end);
});

test('any stream cut anywhere: the events\' bytes are the stream, their data what the strict reader reads', () => {
  fc.assert(
    fc.property(fc.array(event, { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), (events, cuts) => {
      const bytes = Buffer.from(events.join(''));
      const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
      const reader = new RawSseReader(1 << 16);
      const got = [];
      let at = 0;
      for (const p of [...points, bytes.length]) {
        got.push(...reader.push(bytes.subarray(at, p)));
        at = p;
      }
      const end = reader.finish();
      got.push(...end.events);
      assert.equal(end.cut, false);
      const raw = Buffer.concat(got.map((e) => e.raw));
      assert.ok(bytes.equals(raw));
      const whole = new SseParser(1 << 16).push(raw);
      assert.deepEqual(
        got.filter((e) => e.data !== undefined).map((e) => [e.type, e.data]),
        whole.map((e) => [e.type, Buffer.from(e.data).toString('utf8')]),
      );
    }),
    { numRuns: 400 },
  );
});

test('an event that never ends is refused at the bound', () => {
  const reader = new RawSseReader(64);
  assert.throws(() => reader.push(Buffer.from(`data: ${'x'.repeat(100)}`)), (e: unknown) => e instanceof SseError && e.cause === 'frame_too_large');
});

test('a field the format does not have breaks the stream', () => {
  assert.throws(() => new RawSseReader(1024).push(Buffer.from('data: {}\nevil: 1\n\n')), SseError);
});

// A model API's long event (a final response carrying every item) arrives in TLS records of
// 16 KiB or less. Scanning and copying what was held again at every chunk cost the event's
// length once a chunk: 16 MiB in 4 KiB chunks was minutes of the gate's CPU. The bound below
// is a hung case's, a thousand times what the linear reader takes.
test('an event at the bound, in 4 KiB chunks, is read in one pass', { timeout: 60_000 }, async () => {
  const max = 16 * 1024 * 1024;
  const ev = Buffer.from(`data: "${'x'.repeat(max - 12)}"\n\n`);
  const reader = new RawSseReader(max);
  const got = [];
  for (let at = 0, n = 0; at < ev.length; at += 4096, n++) {
    got.push(...reader.push(ev.subarray(at, at + 4096)));
    if (n % 256 === 0) await new Promise((r) => setImmediate(r)); // lets the bound fire
  }
  assert.equal(got.length, 1);
  assert.ok(Buffer.from(got[0].raw).equals(ev));
  assert.equal(got[0].data?.length, max - 10);
});

test('the bound is the event\'s own bytes, however the stream is cut', () => {
  for (const size of [64, 65]) {
    const ev = Buffer.from(`data: ${'x'.repeat(size - 8)}\n\n`); // `size` bytes in all
    for (let cut = 0; cut <= ev.length; cut++) {
      const reader = new RawSseReader(64);
      const read = () => [...reader.push(ev.subarray(0, cut)), ...reader.push(ev.subarray(cut))];
      if (size <= 64) assert.equal(read().length, 1, `${size} bytes cut at ${cut}`);
      else assert.throws(read, (e: unknown) => e instanceof SseError && e.cause === 'frame_too_large', `${size} bytes cut at ${cut}`);
    }
  }
});
