// A request naming two hosts, to a loopback HTTP door or inbox: two Host lines (RFC 9112 3.2 asks
// a 400 for them; Node reads the first, while a proxy in front may have checked the last), or an
// absolute-form target whose authority is another name (RFC 9112 3.2.2: it replaces Host). Each
// is the rebinding check's business: refused as a foreign name (door 403, inbox 421), where before
// the first Host line passed it. Raw sockets to the real binaries.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { MEMORY, PERMIT_ALL, makeHome, tempDir, writeFiles } from '../helpers/cli.js';
import { startHttpGate } from '../helpers/http-gate.js';
import { keygen } from '../helpers/recording-gate.js';
import { startInbox } from '../helpers/inbox-server.js';

const closers: (() => unknown)[] = [];
after(async () => {
  for (const c of closers) await c();
});

/** The status of one raw request on its own socket, bounded. */
function status(url: string, head: string): Promise<number> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname, () => socket.write(head));
    let got = '';
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`no answer in 10 s: ${head}`))), 10_000);
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m) (clearTimeout(timer), socket.destroy(), resolve(Number(m[1])));
    });
    socket.on('error', reject);
  });
}

/** Requests for `path` on `url` that name a foreign host beside or instead of a loopback one. */
const twoHosts = (url: string, path: string) => {
  const port = new URL(url).port;
  return {
    'loopback then foreign Host': `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nHost: evil.example:${port}\r\nAccept: text/event-stream\r\n\r\n`,
    'foreign then loopback Host': `GET ${path} HTTP/1.1\r\nHost: evil.example:${port}\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`,
    'absolute-form foreign target': `GET http://evil.example:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`,
  };
};

test('the HTTP door: a request naming a foreign host beside its own is 403', async () => {
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: http-host-duplicate@1\ntools:\n  read_graph: { effect: read }\n', 'p.cedar': PERMIT_ALL });
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, MEMORY] });
  closers.push(() => g.stop());
  const path = new URL(g.url).pathname;
  // Its own name alone passes the check (then 400: no session named).
  assert.equal(await status(g.url, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`), 400);
  for (const [what, head] of Object.entries(twoHosts(g.url, path))) assert.equal(await status(g.url, head), 403, what);
});

test('the inbox: a request naming a foreign host beside its own is 421', async () => {
  const dir = tempDir('cloakpipe-inbox-host-');
  keygen(join(dir, 'approver'));
  const inbox = await startInbox({ home: makeHome(), approverKey: join(dir, 'approver.key') });
  closers.push(() => inbox.stop());
  assert.equal(await status(inbox.url, 'GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'), 200);
  for (const [what, head] of Object.entries(twoHosts(inbox.url, '/login'))) assert.equal(await status(inbox.url, head), 421, what);
});
