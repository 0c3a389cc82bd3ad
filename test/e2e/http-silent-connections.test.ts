// Connections that hold the gate without asking anything (ADR 068). Node closes a connection
// that has not sent a request's headers after 60 s, and a TLS client that has not finished its
// handshake after 120 s; the doors and the inbox do both after 10 s, so a client that opens
// connections and sends nothing holds a sixth as many of the gate's descriptors (which its
// upstreams and databases need too). What must not be cut: a tool call answered after longer
// than that, the session's SSE stream, and keep-alive between requests.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import net from 'node:net';
import tls from 'node:tls';
import { EVERYTHING, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { httpClient, startHttpGate, type HttpGate } from '../helpers/http-gate.js';
import { openLlmWorld, closeLlmWorld } from '../helpers/llm-gate.js';
import { startInbox } from '../helpers/inbox-server.js';
import { setup } from '../helpers/recording-gate.js';

/** The doors' bound (src/util/http-server.ts, HEADERS_MS), and how long a test waits before it fails. */
const HEADERS_S = 10;
const WAIT_MS = 40_000;

const files = writeFiles({
  'm.yaml': `version: 1
release: silent@1
tools:
  echo: { effect: read, arguments: { message: { type: string } } }
  trigger-long-running-operation:
    effect: read
    arguments:
      duration: { type: number, maximum: 20 }
      steps: { type: integer, maximum: 10 }
`,
  'p.cedar': PERMIT_ALL,
});
const stops: (() => Promise<void>)[] = [];
after(async () => {
  await Promise.allSettled(stops.map((s) => s()));
});

interface Closed {
  /** ms from `t0` to the server's close, or null if it had not closed within WAIT_MS */
  ms: number | null;
  /** what the server sent before it closed */
  got: string;
}

/** When the server closed `s`, and what it sent first (read, so that its close is seen). */
function closedBy(s: net.Socket, t0: number): Promise<Closed> {
  return new Promise((resolve) => {
    let got = '';
    const t = setTimeout(() => resolve({ ms: null, got }), WAIT_MS);
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('error', () => undefined);
    s.once('close', () => {
      clearTimeout(t);
      resolve({ ms: Date.now() - t0, got });
    });
  });
}

/** A connection that sends nothing, and when the server closed it. */
function silent(url: string): Promise<Closed> {
  const u = new URL(url);
  return closedBy(net.connect(Number(u.port), u.hostname), Date.now());
}

async function gate(flags: string[] = []): Promise<HttpGate> {
  const g = await startHttpGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, EVERYTHING], flags });
  stops.push(async () => void (await g.stop()));
  return g;
}

test('HTTP door: silent connections and half-sent headers are closed; a call answered after 12 s, the SSE stream and keep-alive are not cut', async () => {
  const g = await gate();
  const c = await httpClient(g.url);
  stops.push(() => c.close());
  const u = new URL(g.url);
  const quiet = Array.from({ length: 5 }, () => silent(g.url));
  // Half a request's headers, then nothing.
  const half = net.connect(Number(u.port), u.hostname, () => half.write(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n`));
  const halfClosed = closedBy(half, Date.now());
  // A call whose answer comes after the bound: no byte on its connection for 12 s.
  const long = await c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: HEADERS_S + 2, steps: 1 } });
  assert.match(JSON.stringify(long.content), /Long running operation completed/);
  for (const closed of [...(await Promise.all(quiet)), await halfClosed]) {
    assert.notEqual(closed.ms, null, `a connection that sent no whole request was still open after ${WAIT_MS} ms`);
    assert.ok(closed.ms! >= HEADERS_S * 1000 - 500, `closed after ${closed.ms} ms: before the ${HEADERS_S} s a client has`);
    assert.match(closed.got, /^HTTP\/1\.1 408 /);
  }
  // The session, its SSE stream and its keep-alive connections went on through all that.
  const r = await c.callTool({ name: 'echo', arguments: { message: 'after the silence' } });
  assert.match(JSON.stringify(r.content), /after the silence/);
  assert.equal(g.child.exitCode, null);
});

test('the TLS door, the LLM door and the inbox close silent connections too; a TLS client that never finishes its handshake as well', async () => {
  const dir = tempDir();
  const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  const tlsGate = await gate(['--tls-cert', cert, '--tls-key', key]);
  const llm = await openLlmWorld();
  stops.push(() => closeLlmWorld(llm.fake, llm.gate));
  const s = setup();
  const inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
  stops.push(() => inbox.stop());

  const u = new URL(tlsGate.url);
  const t0 = Date.now();
  // Handshake done, then nothing asked.
  const handshaken = tls.connect({ port: Number(u.port), host: u.hostname, rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => handshaken.once('secureConnect', resolve).once('error', reject));
  const closed = await Promise.all([
    silent(tlsGate.url), // raw TCP: no ClientHello
    closedBy(handshaken, t0),
    silent(llm.gate.url),
    silent(inbox.url),
  ]);
  const names = ['TLS door, no handshake', 'TLS door, handshake done', 'LLM door', 'inbox'];
  closed.forEach((c, i) => assert.notEqual(c.ms, null, `${names[i]}: a silent connection was still open after ${WAIT_MS} ms`));
  for (const g of [tlsGate, llm.gate]) assert.equal(g.child.exitCode, null);
});
