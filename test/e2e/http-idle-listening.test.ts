// --session-idle ends a session nobody uses: a client that holds its GET stream open listens for
// the server's messages (tools/list_changed, a sampling request) and is not idle; once that
// stream is gone and nothing else comes, the session ends idle. Real binary, server-memory behind
// it, the SDK client (which opens its GET stream after initialize) and a raw GET on a socket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { MEMORY, PERMIT_ALL, cloakpipe, makeHome, writeFiles } from '../helpers/cli.js';
import { httpClient, rawSession, startHttpGate } from '../helpers/http-gate.js';

const f = writeFiles({
  'm.yaml': 'version: 1\nrelease: http-idle-listening@1\ntools:\n  read_graph: { effect: read }\n',
  'p.cedar': PERMIT_ALL,
});
const IDLE_S = 2;
const gate = (home: string) => startHttpGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--session-idle', `${IDLE_S}s`], upstream: [process.execPath, MEMORY] });

/** The reasons of the session-close entries so far (the ledger does not touch a session). */
const closes = (home: string): string[] =>
  cloakpipe(['ledger', 'show', '--home', home, '--json'])
    .stdout.trim()
    .split('\n')
    .filter((l) => /"kind":"session"/.test(l) && /"reason":/.test(l))
    .map((l) => (JSON.parse(l) as { reason: string }).reason);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a session whose client holds its GET stream open is not ended idle', { timeout: 60_000 }, async () => {
  const home = makeHome();
  const g = await gate(home);
  const client = await httpClient(g.url);
  try {
    await sleep(IDLE_S * 4 * 1000);
    assert.deepEqual(closes(home), [], 'a session ended while its client listened');
    const r = await client.callTool({ name: 'read_graph', arguments: {} });
    assert.notEqual(r.isError, true);
  } finally {
    await client.close();
    await g.stop();
  }
});

test('once its GET stream is gone, the session ends idle', { timeout: 60_000 }, async () => {
  const home = makeHome();
  const g = await gate(home);
  try {
    const sid = await rawSession(g.url);
    const u = new URL(g.url);
    const socket = net.connect(Number(u.port), u.hostname);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sid}\r\n\r\n`);
      socket.once('data', () => resolve());
    });
    await sleep(IDLE_S * 3 * 1000);
    assert.deepEqual(closes(home), [], 'ended while the stream was open');
    socket.destroy();
    for (const end = Date.now() + 30_000; !closes(home).includes('idle'); await sleep(300)) assert.ok(Date.now() < end, 'the session never ended idle');
  } finally {
    await g.stop();
  }
});
