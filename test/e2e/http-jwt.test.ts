// http-proxy --jwks/--issuer/--audience through the real binary: the SDK client with a signed
// access token gets a session whose entries name the token's subject; no token, an expired one
// or one from another issuer gets 401 with the RFC 9728 pointer; another subject cannot use the
// session; the JWKS must be a real one for the gate to start.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { MEMORY, makeHome, writeFiles, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { httpClient, post, rawSession, startHttpGate, type HttpGate } from '../helpers/http-gate.js';

const ISS = 'https://idp.example';
const AUD = 'https://gate.example/mcp';
const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: jwt@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

/** The gate on `home` taking tokens checked against the JWKS file `jwks`, in front of server-memory. */
async function jwtGate(home: string, jwks: string): Promise<HttpGate> {
  const g = await startHttpGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--jwks', jwks, '--issuer', ISS, '--audience', AUD],
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'm.jsonl') },
  });
  gates.push(g);
  return g;
}

test('http-proxy --jwks: tokens decide who may call and name the agent of every entry', async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwks = join(tempDir(), 'jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }));
  const token = (sub: string, o: { iss?: string; exp?: number } = {}) =>
    new SignJWT({ sub })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .setIssuer(o.iss ?? ISS)
      .setAudience(AUD)
      .setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 600)
      .sign(privateKey);
  const home = makeHome();
  const g = await jwtGate(home, jwks);
  // No token, an expired one, another issuer's: 401 pointing at the metadata.
  for (const auth of [undefined, `Bearer ${await token('ada', { exp: Math.floor(Date.now() / 1000) - 600 })}`, `Bearer ${await token('ada', { iss: 'https://evil.example' })}`]) {
    const r = await post(g.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, auth ? { Authorization: auth } : {});
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate')!, /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/);
  }
  const meta = await (await fetch(new URL('/.well-known/oauth-protected-resource', g.url))).json();
  assert.deepEqual(meta.authorization_servers, [ISS]);
  const ada = await token('ada');
  const c = await httpClient(g.url, { Authorization: `Bearer ${ada}` });
  assert.ok(!(await c.callTool({ name: 'read_graph', arguments: {} })).isError);
  // Another subject's valid token cannot use ada's session.
  const sid = (c.transport as unknown as { sessionId: string }).sessionId;
  const r = await post(g.url, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, { Authorization: `Bearer ${await token('bob')}`, 'Mcp-Session-Id': sid });
  assert.equal(r.status, 404);
  // bob gets a session of his own, his client spelling the scheme in lower case (RFC 7235 §2.1).
  await rawSession(g.url, { Authorization: `bearer ${await token('bob')}` });
  await c.close();
  assert.equal(await g.stop(), 0);
  const entries = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  // ada's call, and bob's try at ada's session: refused, and his (ADR 086).
  assert.deepEqual(entries.filter((e) => e.kind === 'decision').map((e) => [e.agent, e.outcome]), [['ada', 'allow'], ['bob', 'refuse']]);
  assert.deepEqual(entries.filter((e) => e.kind === 'session' && e.action === 'open').map((e) => e.agent), ['ada', 'bob']);
  assert.ok(!g.stderr().includes(ada.split('.')[2]), 'no token in the log');
});

test('http-proxy --jwks: a JWKS that is not one, or a missing --issuer/--audience, is exit 2; --jwks allows a non-loopback --listen', () => {
  const bad = join(tempDir(), 'bad.json');
  writeFileSync(bad, JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
  const base = ['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar']];
  const a = cloakpipe([...base, '--jwks', bad, '--issuer', ISS, '--audience', AUD, '--', 'true']);
  assert.equal(a.status, 2);
  assert.match(a.stderr, /symmetric/);
  const b = cloakpipe([...base, '--jwks', bad, '--', 'true']);
  assert.equal(b.status, 2);
  assert.match(b.stderr, /go together/);
  const c = cloakpipe([...base, '--listen', '0.0.0.0:0', '--', 'true']);
  assert.equal(c.status, 2);
  assert.match(c.stderr, /--auth-token-file or --jwks/);
});

test('http-proxy --jwks: the file swapped for a FIFO (or a link to /dev/zero) while the gate runs refuses tokens and stops nothing', { skip: process.platform === 'win32' }, async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const dir = tempDir();
  const jwks = join(dir, 'jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }));
  const ada = await new SignJWT({ sub: 'ada' }).setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }).setIssuer(ISS).setAudience(AUD).setExpirationTime('10m').sign(privateKey);
  const g = await jwtGate(makeHome(), jwks);
  const list = (sid: string) => post(g.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { Accept: 'application/json', Authorization: `Bearer ${ada}`, 'Mcp-Session-Id': sid });
  const sid = await rawSession(g.url, { Authorization: `Bearer ${ada}` });
  for (const swap of [() => execFileSync('mkfifo', [jwks]), () => symlinkSync('/dev/zero', jwks)]) {
    rmSync(jwks);
    swap();
    // Before: the gate's open of the FIFO waited for a writer on its main thread (every request
    // hung), and /dev/zero was read without end. Now each is a file that does not load: 401.
    const r = await Promise.race([list(sid), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 5000).unref())]);
    if (r === 'hung') g.child.kill('SIGKILL'); // a blocked main thread does not take SIGTERM
    assert.notEqual(r, 'hung', 'the gate answers');
    assert.equal((r as Response).status, 401);
  }
  rmSync(jwks);
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }));
  assert.equal((await list(sid)).status, 200, 'mended: the session goes on');
  assert.equal(await g.stop(), 0);
});
