// DNS rebinding to a loopback HTTP door: a page whose own name resolves to 127.0.0.1 is
// same-origin to that name, and a browser sends no Origin on its same-origin GETs, only its own
// name in Host. On a loopback --listen the door answers only requests naming a loopback host
// (or the --public-url's), on any port (a forwarded one too): 403 before anything else runs.
// Proven with raw requests to the real binary (server-memory behind it, one process a session)
// and with real Chromium resolving a foreign name to 127.0.0.1 (--host-resolver-rules).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { MEMORY, makeHome, tempDir, writeFiles, tokenFile } from '../helpers/cli.js';
import { INIT, httpClient, startHttpGate, type HttpGate } from '../helpers/http-gate.js';
import { browserSkip, launchBrowser } from '../helpers/browser.js';

const MANIFEST = `version: 1
release: http-host@1
tools:
  read_graph: { effect: read, arguments: {} }
`;
const TOKEN = 'tok-host-rebinding-0123456789';
const files: Record<string, string> = { ...writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': 'permit (principal, action, resource);\n' }), tokens: tokenFile(`${TOKEN} host-agent\n`) };
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

async function gate(flags: string[] = []): Promise<HttpGate> {
  const g = await startHttpGate({
    home: makeHome(),
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags,
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
  });
  gates.push(g);
  return g;
}

/** One request with the Host header given (fetch would set its own), bounded. */
function raw(url: string, method: string, host: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; sid: string | undefined; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method, timeout: 10_000, headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        // A GET stream that opened stays open: its status is the answer.
        if (method === 'GET' && res.statusCode === 200) return resolve((res.destroy(), { status: 200, sid: undefined, text }));
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, sid: res.headers['mcp-session-id'] as string | undefined, text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} with Host ${host}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

test('a loopback door refuses a request naming another host, whatever the method, with no Origin', async () => {
  const g = await gate();
  const port = new URL(g.url).port;
  // A session opened under a loopback name: a rebound page that learnt its id still gets nothing.
  const own = await raw(g.url, 'POST', `127.0.0.1:${port}`, INIT);
  assert.equal(own.status, 200, own.text);
  const sid = own.sid!;
  for (const host of [`rebind.example:${port}`, 'rebind.example', `127.0.0.1.rebind.example:${port}`]) {
    const init = await raw(g.url, 'POST', host, INIT);
    assert.equal(init.status, 403, `initialize with Host '${host}': ${init.text}`);
    assert.equal(init.sid, undefined, 'no session is opened');
    assert.match(init.text, /Host/);
    const stream = await raw(g.url, 'GET', host, undefined, { 'mcp-session-id': sid, accept: 'text/event-stream' });
    assert.equal(stream.status, 403, `GET stream with Host '${host}'`);
    const del = await raw(g.url, 'DELETE', host, undefined, { 'mcp-session-id': sid });
    assert.equal(del.status, 403, `DELETE with Host '${host}'`);
  }
  // The session was left alone by all of that.
  const list = await raw(g.url, 'POST', `localhost:${port}`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': sid });
  assert.equal(list.status, 200, list.text);
});

test('every loopback name is served, on any port (a forwarded one), and the SDK client works', async () => {
  const g = await gate();
  const port = new URL(g.url).port;
  for (const host of [`localhost:${port}`, `LOCALHOST:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost:9', 'localhost']) {
    const r = await raw(g.url, 'POST', host, INIT);
    assert.equal(r.status, 200, `Host '${host}': ${r.text}`);
  }
  const client = await httpClient(`${g.url}`);
  try {
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'read_graph'));
  } finally {
    await client.close();
  }
});

test('with tokens and --public-url, its host is served too; another is not', async () => {
  const g = await gate(['--auth-token-file', files.tokens, '--public-url', 'https://mcp.example.test/mcp']);
  const auth = { authorization: `Bearer ${TOKEN}` };
  assert.equal((await raw(g.url, 'POST', 'mcp.example.test', INIT, auth)).status, 200);
  assert.equal((await raw(g.url, 'POST', 'other.example.test', INIT, auth)).status, 403);
});

test('real Chromium on a name rebound to 127.0.0.1: its same-origin requests are refused', browserSkip, async () => {
  const g = await gate();
  const port = new URL(g.url).port;
  const browser = await launchBrowser(['--host-resolver-rules=MAP rebind.example 127.0.0.1']);
  try {
    const page = await browser.newPage();
    // The page's origin is http://rebind.example:PORT, served (refused) by the gate itself.
    await page.goto(`http://rebind.example:${port}/`);
    const got = await page.evaluate(async (init) => {
      const post = await fetch('/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(init) });
      // Same-origin GET: the browser sends no Origin, only Host: rebind.example:PORT.
      const get = await fetch('/mcp', { headers: { accept: 'text/event-stream', 'mcp-session-id': 'x' } });
      return { post: post.status, get: get.status, sid: post.headers.get('mcp-session-id') };
    }, INIT);
    assert.deepEqual(got, { post: 403, get: 403, sid: null });
  } finally {
    await browser.close();
  }
});
