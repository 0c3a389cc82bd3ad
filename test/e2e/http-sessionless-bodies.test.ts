// Bodies no session admits (initialize, POSTs refused for their headers) share one door-wide
// budget of bytes (ADR 092): many large ones sent at once wait unread in their sockets, and the
// gate does not grow by their size. Before, each was read as it came: --max-connections bodies of
// --max-body each could be held at once. Every one is then read and answered.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { startHttpGate } from '../helpers/http-gate.js';
import { startRawUpstream, type RawUpstream } from '../helpers/misbehaving-http-upstream.js';
import { rss } from '../helpers/proc-figures.js';

let raw: RawUpstream | undefined;
after(async () => {
  await raw?.close();
});

const MAX_BODY = 4 * 1024 * 1024;
const EACH = 40;

/** A raw POST of about MAX_BODY bytes sent but for its last byte; `finish()` sends it. */
function held(url: URL, contentType: string, id: number): { finish: () => void; answer: Promise<string> } {
  const pad = 'x'.repeat(MAX_BODY - 400);
  const body = Buffer.from(
    JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'big', version: '1' }, _meta: { pad } } }),
  );
  const socket: Socket = connect(Number(url.port), url.hostname);
  socket.write(
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: ${contentType}\r\nAccept: application/json, text/event-stream\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
  );
  socket.write(body.subarray(0, body.length - 1));
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  socket.on('error', () => undefined);
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(got)));
  return { finish: () => socket.write(body.subarray(body.length - 1)), answer };
}

test(`${2 * EACH} initialize and refused POSTs of ${MAX_BODY / 1048576} MiB at once: the gate holds a bounded part of them, then answers each`, { timeout: 180_000 }, async () => {
  raw = await startRawUpstream();
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: sessionless@1\ntools:\n  ok: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
  const g = await startHttpGate({
    home: makeHome(),
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    flags: ['--max-body', String(MAX_BODY), '--max-sessions', '2', '--upstream-url', raw.url],
    upstream: [],
  });
  const url = new URL(g.url);
  const before = rss(g.child.pid!);
  const posts = [
    ...Array.from({ length: EACH }, (_, n) => held(url, 'application/json', n)),
    // Refused 415 for its header, its body still read for the entry's digest.
    ...Array.from({ length: EACH }, (_, n) => held(url, 'text/plain', EACH + n)),
  ];
  await new Promise((r) => setTimeout(r, 4000)); // every body but its last byte is sent
  const grown = rss(g.child.pid!) - before;
  assert.ok(grown < 96 * 1024 * 1024, `the gate grew by ${Math.round(grown / 1048576)} MiB while ${(2 * EACH * MAX_BODY) / 1048576} MiB of bodies were sent`);
  for (const p of posts) p.finish();
  const answers = await Promise.all(posts.map((p) => p.answer));
  const statuses = answers.map((a) => /^HTTP\/1\.1 (\d+) /.exec(a)?.[1]);
  assert.deepEqual(statuses.slice(EACH).filter((s) => s !== '415'), [], 'each refused POST is answered 415');
  const opened = statuses.slice(0, EACH);
  assert.equal(opened.filter((s) => s === '200').length, 2, 'two sessions open (--max-sessions 2)');
  assert.equal(opened.filter((s) => s === '503').length, EACH - 2, 'the others are answered 503');
  assert.equal(await g.stop(), 0);
});
