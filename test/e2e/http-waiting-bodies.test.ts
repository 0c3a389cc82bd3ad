// Past --max-in-flight the HTTP door takes no more bodies from the host until a call ends
// (product.md 7a: memory stays bounded whatever the host sends). POSTs that wait are left unread
// in their sockets: a host that sends many large bodies while a call is held must not grow the
// gate by their size. Then every one of them is read, decided and answered in turn.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { post, rawSession, startHttpGate } from '../helpers/http-gate.js';
import { CANARY, startRawUpstream, type RawUpstream } from '../helpers/misbehaving-http-upstream.js';
import { rss } from '../helpers/proc-figures.js';

let raw: RawUpstream | undefined;
after(async () => {
  await raw?.close();
});

const WAITING = 120;
const BODY = 1024 * 1024;

/** One raw POST of a call whose argument pads it to BODY bytes; resolves with the whole answer. */
function bigCall(url: URL, sid: string, id: number): { socket: Socket; answer: Promise<string> } {
  const pad = 'x'.repeat(BODY - 200);
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'ok', arguments: { pad } } });
  const socket = connect(Number(url.port), url.hostname);
  socket.write(
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAccept: application/json\r\n` +
      `Mcp-Session-Id: ${sid}\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`,
  );
  socket.write(body);
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(got)));
  socket.on('error', () => undefined);
  return { socket, answer };
}

test(`${WAITING} POSTs of 1 MiB wait unread behind --max-in-flight 1: the gate does not grow by their size, then all are answered`, { timeout: 180_000 }, async () => {
  raw = await startRawUpstream();
  const f = writeFiles({
    'm.yaml': 'version: 1\nrelease: waiting@1\ntools:\n  held: { effect: read, arguments: {} }\n  ok: { effect: read, arguments: { pad: { type: string } } }\n',
    'p.cedar': PERMIT_ALL,
  });
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-in-flight', '1', '--upstream-url', raw.url], upstream: [] });
  const url = new URL(g.url);
  const sid = await rawSession(g.url);
  const first = post(g.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'held', arguments: {} } }, { 'Mcp-Session-Id': sid, Accept: 'application/json' });
  await raw.heldCount(1);
  const before = rss(g.child.pid!);
  const calls = Array.from({ length: WAITING }, (_, n) => bigCall(url, sid, 100 + n));
  // Every body is sent; the gate has had every chance to read them.
  await new Promise((r) => setTimeout(r, 3000));
  const grown = rss(g.child.pid!) - before;
  assert.ok(grown < 48 * 1024 * 1024, `the gate grew by ${Math.round(grown / 1048576)} MiB while ${WAITING} MiB of bodies waited`);
  raw.held.shift()!();
  assert.equal((await first).status, 200);
  const answers = await Promise.all(calls.map((c) => c.answer));
  for (const a of answers) {
    assert.match(a, /^HTTP\/1\.1 200 /);
    assert.ok(a.includes(`ok ${CANARY}`));
  }
  assert.equal(await g.stop(), 0);
});
