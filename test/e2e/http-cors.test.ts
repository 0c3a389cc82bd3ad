// CORS on `cloakpipe http-proxy --allowed-origin`, over raw HTTP through the real binary: a
// preflight from an allowed origin is answered 204 without a token and opens nothing; every
// answer to that origin (errors too) names it; another origin gets 403 with no CORS header; a
// request without Origin is answered as before; a malformed --allowed-origin does not start.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { MEMORY, makeHome, writeFiles, tempDir, cloakpipe, tokenFile } from '../helpers/cli.js';
import { INIT, post, startHttpGate, type HttpGate } from '../helpers/http-gate.js';

const ALLOWED = 'http://localhost:6274';
const TOKEN = 'tok-cors-0123456789abcdef';
const files: Record<string, string> = {
  ...writeFiles({
    'm.yaml': 'version: 1\nrelease: http-cors@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n',
    'p.cedar': 'permit (principal, action, resource);\n',
  }),
  tokens: tokenFile(`${TOKEN} page-agent\n`),
};
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

async function gate(flags: string[] = []): Promise<HttpGate & { home: string }> {
  const home = makeHome();
  const g = await startHttpGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--auth-token-file', files.tokens, '--allowed-origin', 'https://other.example', '--allowed-origin', ALLOWED, ...flags],
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
  });
  gates.push(g);
  return Object.assign(g, { home });
}

const entries = (home: string): any[] =>
  cloakpipe(['ledger', 'show', '--home', home, '--json'])
    .stdout.trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

const corsOf = (r: Response) => [...r.headers].filter(([k]) => k.startsWith('access-control-'));

const preflight = (url: string, origin: string, method = 'POST', headers = 'authorization, content-type, mcp-protocol-version') =>
  fetch(url, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers } });

test('a preflight from an allowed origin: 204 with the exact origin, methods, headers and max-age, no token needed, nothing opened', async () => {
  const g = await gate();
  for (const method of ['POST', 'GET', 'DELETE']) {
    const r = await preflight(g.url, ALLOWED, method);
    assert.equal(r.status, 204, method);
    assert.equal(await r.text(), '');
    assert.equal(r.headers.get('access-control-allow-origin'), ALLOWED);
    assert.equal(r.headers.get('access-control-allow-methods'), 'POST, GET, DELETE');
    const allowed = r.headers.get('access-control-allow-headers')!.split(', ');
    for (const h of ['content-type', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'cloakpipe-task', 'accept']) assert.ok(allowed.includes(h), h);
    assert.equal(r.headers.get('access-control-max-age'), '600');
    assert.equal(r.headers.get('vary'), 'Origin');
    assert.equal(r.headers.get('access-control-allow-credentials'), null, 'bearer headers, not cookies');
  }
  // The RFC 9728 metadata a browser client reads first: GET only.
  const m = await preflight(new URL('/.well-known/oauth-protected-resource/mcp', g.url).href, ALLOWED, 'GET', 'mcp-protocol-version');
  assert.equal(m.status, 204);
  assert.equal(m.headers.get('access-control-allow-origin'), ALLOWED);
  assert.equal(m.headers.get('access-control-allow-methods'), 'GET');
  // Another path has nothing to allow.
  const other = await preflight(g.url.replace(/\/mcp$/, '/other'), ALLOWED);
  assert.equal(other.status, 404);
  assert.equal(await g.stop(), 0);
  assert.deepEqual(entries(g.home).filter((e) => e.kind === 'session' || e.kind === 'decision'), [], 'no session opened, nothing reached a relay');
});

test('every answer to an allowed origin names it and exposes what the SDK reads: 401, 400, 404, the session, SSE, 202', async () => {
  const g = await gate();
  const o = { Origin: ALLOWED };
  const check = (r: Response, what: string) => {
    assert.equal(r.headers.get('access-control-allow-origin'), ALLOWED, what);
    assert.equal(r.headers.get('access-control-expose-headers'), 'mcp-session-id, www-authenticate', what);
    assert.equal(r.headers.get('vary'), 'Origin', what);
    assert.equal(r.headers.get('access-control-allow-credentials'), null, what);
  };
  const none = await post(g.url, INIT, o);
  assert.equal(none.status, 401);
  assert.match(none.headers.get('www-authenticate')!, /^Bearer resource_metadata="/);
  check(none, '401');
  const auth = { ...o, Authorization: `Bearer ${TOKEN}` };
  const init = await post(g.url, INIT, { ...auth, Accept: 'application/json' });
  assert.equal(init.status, 200);
  check(init, 'initialize');
  const sid = init.headers.get('mcp-session-id')!;
  assert.match(sid, /^[A-Za-z0-9_-]{43}$/);
  await init.text();
  const h = { ...auth, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
  const n = await post(g.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  assert.equal(n.status, 202);
  check(n, '202');
  const sse = await post(g.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_graph', arguments: {} } }, h);
  assert.equal(sse.status, 200);
  assert.match(sse.headers.get('content-type')!, /^text\/event-stream/);
  check(sse, 'SSE');
  assert.match(await sse.text(), /"id":2,"jsonrpc":"2.0","result"/);
  const bad = await post(g.url, '{"jsonrpc":"2.0",', h);
  assert.equal(bad.status, 400);
  check(bad, '400');
  const gone = await post(g.url, INIT, { ...auth, 'Mcp-Session-Id': 'x'.repeat(43) });
  assert.equal(gone.status, 400);
  check(gone, '400 initialize naming a session');
  const unknown = await post(g.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, { ...auth, 'Mcp-Session-Id': 'x'.repeat(43) });
  assert.equal(unknown.status, 404);
  check(unknown, '404');
  const meta = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', g.url), { headers: o });
  assert.equal(meta.status, 200);
  check(meta, 'metadata');
  const del = await fetch(g.url, { method: 'DELETE', headers: h });
  assert.equal(del.status, 200);
  check(del, 'DELETE');
});

test('another origin: 403 on the preflight and on the request, no CORS header; without Origin the answers carry none', async () => {
  const g = await gate();
  for (const origin of ['http://evil.example', 'http://localhost:6275', 'null', `${ALLOWED}/`]) {
    const p = await preflight(g.url, origin);
    assert.equal(p.status, 403, origin);
    assert.deepEqual(corsOf(p), [], origin);
    const r = await post(g.url, INIT, { Origin: origin, Authorization: `Bearer ${TOKEN}` });
    assert.equal(r.status, 403, origin);
    assert.deepEqual(corsOf(r), [], origin);
  }
  // No Origin (not a browser): as before, an OPTIONS is not a preflight and needs the token.
  const bare = await fetch(g.url, { method: 'OPTIONS', headers: { 'Access-Control-Request-Method': 'POST' } });
  assert.equal(bare.status, 401);
  assert.deepEqual(corsOf(bare), []);
  const options = await fetch(g.url, { method: 'OPTIONS', headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(options.status, 405);
  const init = await post(g.url, INIT, { Authorization: `Bearer ${TOKEN}`, Accept: 'application/json' });
  assert.equal(init.status, 200);
  assert.deepEqual(corsOf(init), []);
  await init.text();
  assert.equal(await g.stop(), 0);
  assert.equal(entries(g.home).filter((e) => e.kind === 'session' && e.action === 'open').length, 1, 'only the request without Origin opened a session');
});

test('an --allowed-origin no browser would send does not start (exit 2), naming the flag, not the value', () => {
  const base = ['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar']];
  for (const bad of ['*', 'null', `${ALLOWED}/`, 'http://LOCALHOST:6274', 'localhost:6274', 'https://app.example.com:443']) {
    const r = cloakpipe([...base, '--allowed-origin', ALLOWED, '--allowed-origin', bad, '--', 'true']);
    assert.equal(r.status, 2, bad);
    assert.match(r.stderr, /--allowed-origin #2 is not an origin/, bad);
    if (bad.length > 4) assert.ok(!r.stderr.includes(bad), bad);
  }
});
