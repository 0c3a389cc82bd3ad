// What one HTTP session holds for a host that does not read the server's messages: a GET stream
// not opened yet, or one opened and never read. Each message may be 64 MiB (the upstream's line
// bound), so the bound is in bytes as well as messages: a chatty or hostile upstream grew the
// gate by gigabytes before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { GET_STREAMS, HttpSessionTransport } from '../../src/doors/http.js';

/** A response whose host reads nothing: every byte written stays in writableLength. */
function unread(): ServerResponse & { bytes: number } {
  const r = {
    bytes: 0,
    headersSent: false,
    writableEnded: false,
    get writableLength() {
      return r.bytes;
    },
    writeHead() {
      r.headersSent = true;
      return r;
    },
    flushHeaders() {},
    on() {
      return r;
    },
    write(s: string) {
      r.bytes += Buffer.byteLength(s);
      return false;
    },
    end() {
      r.writableEnded = true;
    },
    destroyed: false,
    destroy() {
      r.destroyed = true;
      r.bytes = 0; // what a cut socket held is freed
    },
  };
  return r as unknown as ServerResponse & { bytes: number; destroyed: boolean };
}

const note = (i: number, size: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `${i}:${'x'.repeat(size)}` } });
const MiB = 1024 * 1024;

test('server messages held for a GET stream not yet open: at most 16 MiB of them (the newest kept), not 256 of any size', () => {
  const t = new HttpSessionTransport();
  for (let i = 0; i < 40; i++) t.send(note(i, 2 * MiB));
  const res = unread();
  t.openStream(res);
  assert.ok(res.bytes <= 17 * MiB, `${res.bytes} bytes held`);
  assert.ok(res.bytes > 14 * MiB, 'the newest are delivered');
  // One message over the bound alone is still delivered (the bound never stops a single message).
  const u = new HttpSessionTransport();
  u.send(note(0, 20 * MiB));
  const big = unread();
  u.openStream(big);
  assert.ok(big.bytes > 20 * MiB);
});

test('a GET stream the host never reads: past 16 MiB unread, new server messages are dropped', () => {
  const t = new HttpSessionTransport();
  const res = unread();
  t.openStream(res);
  for (let i = 0; i < 40; i++) t.send(note(i, 2 * MiB));
  assert.ok(res.bytes <= 19 * MiB, `${res.bytes} bytes unread`);
});

test('past GET_STREAMS open, the oldest GET stream is cut when its host left bytes unread, else ended', () => {
  const t = new HttpSessionTransport();
  const held: ReturnType<typeof unread>[] = [];
  for (let i = 0; i <= GET_STREAMS; i++) {
    const res = unread();
    t.openStream(res);
    held.push(res);
    for (let j = 0; j < 10; j++) t.send(note(j, 2 * MiB)); // on the newest
  }
  assert.ok(held[0].destroyed && held[0].bytes === 0, 'the oldest, holding unread bytes, is cut (what it held is freed)');
  assert.ok(held.slice(1).every((r) => !r.destroyed && !r.writableEnded), 'the others stay open');
  assert.ok(held[GET_STREAMS].bytes > 14 * MiB, 'the newest takes the messages');
  // One whose host read everything is ended as a stream is (the host may reconnect cleanly).
  const u = new HttpSessionTransport();
  const read = Array.from({ length: GET_STREAMS + 1 }, unread);
  for (const r of read) u.openStream(r);
  assert.ok(read[0].writableEnded && !read[0].destroyed);
});
