// --tls-cert/--tls-key: the HTTP door over HTTPS with a self-signed certificate made by openssl
// here. The official SDK client speaks to it trusting only that certificate; a client that does
// not trust it gets no session; and `mcp-proxy --upstream-url https://…` reaches it through the
// gate's own TLS client (trusting it through NODE_EXTRA_CA_CERTS, as a user would).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MEMORY, makeHome, writeFiles, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { startHttpGate, type HttpGate } from '../helpers/http-gate.js';

const dir = tempDir();
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
execFileSync('openssl', [
  'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost',
  '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert,
], { stdio: 'ignore' });
const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: tls@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

/** fetch over node:https trusting only `ca` (the SDK transport takes a fetch of its own). */
function fetchTrusting(ca: Buffer) {
  return (url: string | URL, init: RequestInit = {}): Promise<Response> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((v, k) => (headers[k] = v));
      const req = request(url, { method: init.method ?? 'GET', headers, ca }, (res) => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        const body = res.statusCode === 202 || res.statusCode === 204 ? null : (Readable.toWeb(res) as ReadableStream);
        resolve(new Response(body, { status: res.statusCode, headers: h }));
      });
      req.on('error', reject);
      init.signal?.addEventListener('abort', () => req.destroy());
      req.end(init.body as string | undefined);
    });
}

async function tlsGate(): Promise<HttpGate & { home: string }> {
  const home = makeHome();
  const g = await startHttpGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--tls-cert', cert, '--tls-key', key], upstream: [process.execPath, MEMORY], env: { MEMORY_FILE_PATH: join(tempDir(), 'm.jsonl') } });
  gates.push(g);
  return Object.assign(g, { home });
}

test('--tls-cert: the door serves HTTPS; the SDK client trusting the certificate gets a gated session', async () => {
  const g = await tlsGate();
  assert.match(g.url, /^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
  const c = new Client({ name: 'tls-host', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(g.url), { fetch: fetchTrusting(readFileSync(cert)) }));
  const r = await c.callTool({ name: 'read_graph', arguments: {} });
  assert.ok(!r.isError);
  await assert.rejects(c.callTool({ name: 'delete_entities', arguments: { entityNames: ['x'] } }), /undeclared_tool/);
  await c.close();
});

test('--tls-cert: plain HTTP to the TLS port gets no session, nor does a client that does not trust the certificate', async () => {
  const g = await tlsGate();
  const plain = g.url.replace(/^https:/, 'http:');
  await assert.rejects(fetch(plain, { method: 'POST', body: '{}' }).then((r) => r.text()));
  // Node's fetch trusts only the system roots: the self-signed certificate is refused.
  await assert.rejects(fetch(g.url, { method: 'POST', body: '{}' }), (e: Error) => /fetch failed/.test(e.message));
});

test('mcp-proxy --upstream-url https://: the gate trusts the server it was told to (NODE_EXTRA_CA_CERTS) and no other', async () => {
  const g = await tlsGate();
  const via = await startGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', g.url], upstream: [], env: { NODE_EXTRA_CA_CERTS: cert } });
  const r = await via.client.callTool({ name: 'read_graph', arguments: {} });
  assert.ok(!r.isError);
  await via.close();
  // Without the certificate trusted, the upstream is unreachable: the initialize fails, nothing runs.
  await assert.rejects(startGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', g.url], upstream: [] }));
});

test('--tls-cert without --tls-key is exit 2; a key that is not the pair is exit 2 and never printed', () => {
  const a = cloakpipe(['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--tls-cert', cert, '--', 'true']);
  assert.equal(a.status, 2);
  const other = join(dir, 'other.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', other], { stdio: 'ignore' });
  writeFileSync(join(dir, 'junk.pem'), 'not a key', { mode: 0o600 });
  for (const k of [other, join(dir, 'junk.pem')]) {
    const b = cloakpipe(['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--tls-cert', cert, '--tls-key', k, '--', 'true']);
    assert.equal(b.status, 2, b.stderr);
    assert.match(b.stderr, /do not load/);
    const body = readFileSync(k, 'utf8').split('\n').find((l) => l.length > 8 && !l.startsWith('-----'))!;
    assert.ok(!b.stderr.includes('PRIVATE KEY') && !b.stderr.includes(body), b.stderr);
  }
});
