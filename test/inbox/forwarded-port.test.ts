// A loopback inbox reached through a forwarded port (ssh -L 9000:127.0.0.1:8932, the way to
// reach a loopback-only page on another machine): the browser names the forwarded port in Host
// and Origin. The inbox answers any port of a loopback name; another name is still refused.
// Through a real TCP forwarder to the real binary: login, the list, a rebound name.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type AddressInfo } from 'node:net';
import { request } from 'node:http';
import { join } from 'node:path';
import { makeHome, tempDir } from '../helpers/cli.js';
import { keygen } from '../helpers/recording-gate.js';
import { startInbox } from '../helpers/inbox-server.js';

const dir = tempDir('cloakpipe-inbox-forward-');
keygen(join(dir, 'approver'));
const closers: (() => unknown)[] = [];
after(async () => {
  for (const c of closers) await c();
});

/** A port forwarder on 127.0.0.1 to `port`, as ssh -L is: bytes only, Host untouched. */
async function forward(port: number): Promise<number> {
  const server = createServer((a) => {
    const b = connect(port, '127.0.0.1');
    a.pipe(b).pipe(a);
    a.on('error', () => b.destroy());
    b.on('error', () => a.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(() => new Promise((r) => server.close(r)));
  return (server.address() as AddressInfo).port;
}

/** One request to the forwarder as the browser there sends it (Host and Origin name its port), bounded. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

test('through a forwarded port: the login and the list work; a rebound name through it is still refused', async () => {
  const inbox = await startInbox({ home: makeHome(), approverKey: join(dir, 'approver.key') });
  closers.push(() => inbox.stop());
  const fwd = await forward(Number(new URL(inbox.url).port));
  for (const name of ['127.0.0.1', 'localhost']) {
    const own = { host: `${name}:${fwd}`, origin: `http://${name}:${fwd}` };
    const login = await send(fwd, 'POST', '/login', { ...own, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }, new URLSearchParams({ token: inbox.token }).toString());
    assert.equal(login.status, 200, `login at ${own.host}: ${login.body}`);
    const cookie = String((login.headers['set-cookie'] as string[])[0]).split(';')[0];
    const { csrf } = JSON.parse(login.body) as { csrf: string };
    const list = await send(fwd, 'GET', '/api/requests', { host: own.host, cookie, 'x-csrf-token': csrf });
    assert.equal(list.status, 200, list.body);
    assert.deepEqual(JSON.parse(list.body), { requests: [] });
    const rebound = await send(fwd, 'GET', '/api/requests', { host: `evil.example:${fwd}`, cookie, 'x-csrf-token': csrf });
    assert.equal(rebound.status, 421, 'a rebound DNS name');
  }
});
