// The session's GET stream when its client is gone without a FIN (a network change, a laptop
// that slept): the gate learns it only when TCP gives up, minutes later. Meanwhile the client's
// reconnect must be served and take the messages (it was 409 until the old socket died, so the
// server's messages reached nobody); past GET_STREAMS (4) open, the oldest is ended; and an idle
// stream carries heartbeats, so that TCP finds the dead peer at all. Real binary, server-everything behind it; the vanished client is a raw socket
// that stops reading.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { EVERYTHING, PERMIT_ALL, makeHome, tokenFile, writeFiles } from '../helpers/cli.js';
import { post, rawSession, startHttpGate } from '../helpers/http-gate.js';

const WAIT_MS = 45_000; // three heartbeats (src/doors/http.ts HEARTBEAT_MS)
const ALICE = 'tok-alice-0123456789abcdef';
const BOB = 'tok-bob-0123456789abcdef01';
const f = writeFiles({
  'm.yaml': 'version: 1\nrelease: http-get-stream@1\ntools:\n  trigger-long-running-operation: { effect: read, arguments: { duration: { type: number }, steps: { type: integer } } }\n',
  'p.cedar': PERMIT_ALL,
});
const gate = () =>
  startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--auth-token-file', tokenFile(`${ALICE} alice\n${BOB} bob\n`)], upstream: [process.execPath, EVERYTHING] });

/** A GET stream on a raw socket, once its headers came: the socket, paused (it reads no more), and what it got. */
function rawStream(url: string, headers: Record<string, string>): Promise<{ socket: net.Socket; head: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname, () => {
      const lines = Object.entries({ Host: u.host, Accept: 'text/event-stream', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
      socket.write(`GET ${u.pathname} HTTP/1.1\r\n${lines.join('')}\r\n`);
    });
    let head = '';
    socket.on('error', reject);
    socket.on('data', function onData(d: Buffer) {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      resolve({ socket, head });
    });
  });
}

/** Reads `body` until `done(text so far)`, or WAIT_MS: what it read. */
async function readUntil(body: ReadableStream<Uint8Array>, done: (text: string) => boolean): Promise<string> {
  const reader = body.getReader();
  let text = '';
  const timer = setTimeout(() => void reader.cancel(), WAIT_MS);
  try {
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) return text;
      text += Buffer.from(value).toString('utf8');
      if (done(text)) return text;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

/** Whether the server ended `socket`'s response (the chunked terminator) or closed it, within WAIT_MS. */
function ended(socket: net.Socket): Promise<boolean> {
  return new Promise((resolve) => {
    let got = '';
    const timer = setTimeout(() => resolve(false), WAIT_MS);
    const yes = () => (clearTimeout(timer), resolve(true));
    socket.on('data', (d: Buffer) => ((got += d.toString('latin1')), got.endsWith('0\r\n\r\n') && yes()));
    socket.once('close', yes);
    socket.resume();
  });
}

test("a new GET of the session is served beside a client that stopped reading and takes the messages; another agent's GET is not", async () => {
  const g = await gate();
  const alice = { Authorization: `Bearer ${ALICE}` };
  const sid = await rawSession(g.url, alice);
  const old = await rawStream(g.url, { ...alice, 'Mcp-Session-Id': sid });
  assert.match(old.head, /^HTTP\/1\.1 200/);
  // Bob holds a token but not the session: he can neither take nor learn of its stream.
  const bob = await fetch(g.url, { headers: { Authorization: `Bearer ${BOB}`, 'Mcp-Session-Id': sid, Accept: 'text/event-stream' } });
  assert.equal(bob.status, 404);
  await bob.text();
  const ac = new AbortController();
  const get = () => fetch(g.url, { headers: { ...alice, 'Mcp-Session-Id': sid, Accept: 'text/event-stream' }, signal: ac.signal });
  const reconnects = [await get(), await get(), await get(), await get()];
  assert.deepEqual(reconnects.map((r) => r.status), [200, 200, 200, 200], 'each reconnect is served, not refused while the old socket lives');
  assert.ok(await ended(old.socket), 'the fifth open stream ends the oldest');
  old.socket.destroy();
  const next = reconnects[3];
  // A call answered as JSON: its progress goes on the session's stream, now the new one.
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 }, _meta: { progressToken: 'p-1' } } };
  const answer = post(g.url, call, { ...alice, 'Mcp-Session-Id': sid, Accept: 'application/json' });
  const streamed = await readUntil(next.body!, (t) => t.includes('notifications/progress'));
  assert.match(streamed, /"progressToken":"p-1"/);
  assert.equal((await answer).status, 200);
  ac.abort();
  await g.stop();
});

test('an idle GET stream carries heartbeats (SSE comments), so a peer gone without a FIN is found', async () => {
  const g = await gate();
  const alice = { Authorization: `Bearer ${ALICE}` };
  const sid = await rawSession(g.url, alice);
  const ac = new AbortController();
  const stream = await fetch(g.url, { headers: { ...alice, 'Mcp-Session-Id': sid, Accept: 'text/event-stream' }, signal: ac.signal });
  assert.equal(stream.status, 200);
  const text = await readUntil(stream.body!, (t) => /^:/m.test(t));
  assert.match(text, /^: keep-alive\n\n/m, 'a comment line within three heartbeat periods');
  ac.abort();
  await g.stop();
});
