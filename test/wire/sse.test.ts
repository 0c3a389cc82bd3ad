// The strict SSE reader of the HTTP upstream: differential against eventsource-parser (what the
// MCP SDK's own client reads SSE with) on every stream both accept, the same events whatever
// the chunk boundaries, and the lines a lenient reader would ignore refused instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createParser } from 'eventsource-parser';
import { SseError, SseParser, type SseEvent } from '../../src/wire/sse.js';

const RUNS = 500;
const utf8 = new TextEncoder();
const text = (e: SseEvent) => ({ data: Buffer.from(e.data).toString('utf8'), event: e.type, id: e.lastEventId });

/** Everything our parser dispatches, the stream fed in the given chunks. */
function ours(stream: Uint8Array, cuts: number[], max = 1 << 20): { data: string; event?: string; id?: string }[] {
  const p = new SseParser(max);
  const out: SseEvent[] = [];
  let at = 0;
  for (const c of [...cuts.filter((x) => x > 0 && x < stream.length).sort((a, b) => a - b), stream.length]) {
    out.push(...p.push(stream.subarray(at, c)));
    at = c;
  }
  return out.map(text);
}

function theirs(stream: string): { data: string; event?: string; id?: string }[] {
  const out: { data: string; event?: string; id?: string }[] = [];
  let id: string | undefined;
  const p = createParser({
    onEvent: (e) => {
      if (e.id !== undefined) id = e.id;
      out.push({ data: e.data, event: e.event, id });
    },
  });
  p.feed(stream);
  return out;
}

const value = fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', ':', '{', '"', 'é', '😀', '\u2028'), maxLength: 12 }).filter((s) => !s.startsWith(' '));
const eol = fc.constantFrom('\n', '\r\n', '\r');
const line = fc.oneof(
  fc.tuple(fc.constantFrom('data', 'event', 'id'), fc.constantFrom(': ', ':'), value).map(([f, sep, v]) => `${f}${sep}${v}`),
  value.map((v) => `:${v}`),
  fc.constantFrom('data', 'retry: 1500', 'retry:0'),
);
const stream = fc.array(fc.tuple(fc.array(fc.tuple(line, eol), { maxLength: 5 }), eol), { maxLength: 6 }).map((events) =>
  events.map(([lines, end]) => lines.map(([l, e]) => l + e).join('') + end).join(''),
);

test('sse: the same events as eventsource-parser on streams of the four fields and comments, however the bytes are cut', () => {
  fc.assert(
    // A CR at the very end may be half a CRLF: eventsource-parser waits for the next byte, the
    // WHATWG algorithm (and this reader) ends the line at once; such streams are left out.
    fc.property(stream.filter((s) => !s.endsWith('\r')), fc.array(fc.nat(400), { maxLength: 8 }), (s, cuts) => {
      const bytes = utf8.encode(s);
      const mine = ours(bytes, cuts);
      const ref = theirs(s).filter((e) => e.data !== ''); // an event whose data is empty is not dispatched (WHATWG)
      assert.deepStrictEqual(
        mine.map((e) => ({ data: e.data, event: e.event === 'message' ? undefined : e.event })),
        ref.map((e) => ({ data: e.data, event: e.event === 'message' ? undefined : e.event })),
      );
    }),
    { numRuns: RUNS },
  );
});

test('sse: the last event id holds across events until another id field (what a resumed GET sends back)', () => {
  assert.deepStrictEqual(
    ours(utf8.encode('id: 7\ndata: \n\ndata: a\n\nid: 8\ndata: b\n\nid\ndata: c\n\n'), []).map((e) => [e.data, e.id]),
    [['a', '7'], ['b', '8'], ['c', '']],
  );
});

test('sse: a leading BOM is skipped even split over chunks; a second one is data', () => {
  const s = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('data: x\n\n')]);
  for (let cut = 0; cut <= 4; cut++) assert.deepStrictEqual(ours(s, [cut]).map((e) => e.data), ['x']);
  assert.throws(() => ours(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]), Buffer.from('data: x\n\n')]), []), SseError);
});

test('sse: lines a lenient reader ignores are refused (unknown field, NUL in id, a retry that is not a number, a non-UTF-8 event name)', () => {
  for (const s of ['dat: x\n\n', 'Data: x\n\n', 'data : x\n\n', 'id: a\0b\n\n', 'retry: soon\n\n', 'retry: -1\n\n', 'x\n\n']) {
    assert.throws(() => ours(utf8.encode(s), []), (e: unknown) => e instanceof SseError && e.cause === 'sse_malformed', JSON.stringify(s));
  }
  assert.throws(() => ours(Buffer.concat([Buffer.from('event: '), Buffer.from([0xff]), Buffer.from('\ndata: x\n\n')]), []), SseError);
});

test('sse: event data stays bytes (invalid UTF-8 reaches the strict JSON parser, which refuses it)', () => {
  const ev = ours(Buffer.concat([Buffer.from('data: '), Buffer.from([0xc3, 0x28]), Buffer.from('\n\n')]), []);
  assert.deepStrictEqual([...new SseParser(100).push(Buffer.concat([Buffer.from('data: '), Buffer.from([0xc3, 0x28]), Buffer.from('\n\n')]))[0].data], [0xc3, 0x28]);
  assert.equal(ev.length, 1);
});

test('sse: one event longer than the bound is frame_too_large, whether in one line or many, before it is all held', () => {
  const p = new SseParser(1000);
  assert.throws(() => p.push(utf8.encode('data: ' + 'x'.repeat(1001))), (e: unknown) => e instanceof SseError && e.cause === 'frame_too_large');
  const q = new SseParser(1000);
  assert.throws(() => {
    for (let i = 0; i < 20; i++) q.push(utf8.encode('data: ' + 'x'.repeat(99) + '\n'));
  }, (e: unknown) => e instanceof SseError && e.cause === 'frame_too_large');
  // Many events each under the bound are fine.
  const r = new SseParser(1000);
  let n = 0;
  for (let i = 0; i < 50; i++) n += r.push(utf8.encode('data: ' + 'x'.repeat(900) + '\n\n')).length;
  assert.equal(n, 50);
});

test('sse: a stream cut inside an event reports it (end() is true) and dispatches nothing of it', () => {
  const p = new SseParser(1000);
  assert.deepStrictEqual(p.push(utf8.encode('data: {"a":1}\n\ndata: {"b"')), [{ data: utf8.encode('{"a":1}') }].map((e) => ({ data: Buffer.from(e.data) })));
  assert.equal(p.end(), true);
  const q = new SseParser(1000);
  q.push(utf8.encode('data: x\n\n'));
  assert.equal(q.end(), false);
});

test('dispatchedId: a priming event (an id, no data) sets it; the id of an event the stream cut before its end does not', () => {
  const p = new SseParser(1024);
  assert.deepEqual(p.push(Buffer.from('id: a-0\ndata:\n\n')), []);
  assert.equal(p.dispatchedId, 'a-0');
  assert.equal(p.push(Buffer.from('id: a-1\ndata: {}\n\nid: a-2\ndata: {"x"')).length, 1);
  assert.equal(p.dispatchedId, 'a-1', 'a-2 was never read whole: resuming from it would skip it');
  assert.equal(p.end(), true);
});
