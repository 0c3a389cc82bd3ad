// What one HTTP session holds for a host that does not read the server's messages: a GET stream
// not opened yet, or one opened and never read. Each message may be 64 MiB (the upstream's line
// bound), so the bound is in bytes as well as messages: a chatty or hostile upstream grew the
// gate by gigabytes before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { HttpSessionTransport } from '../../src/doors/http.js';

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
  };
  return r as unknown as ServerResponse & { bytes: number };
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
