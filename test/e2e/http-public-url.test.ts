// `cloakpipe http-proxy --public-url` through the real binary: the RFC 9728 metadata and the
// 401's WWW-Authenticate name the endpoint as clients reach it, not the listen address; a
// wildcard --listen with tokens does not start without it; a bad one is exit 2 naming the flag,
// never the value.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { MEMORY, makeHome, writeFiles, tempDir, cloakpipe, tokenFile } from '../helpers/cli.js';
import { INIT, post, startHttpGate, type HttpGate } from '../helpers/http-gate.js';

const TOKEN = 'tok-public-0123456789abcdef';
const files: Record<string, string> = {
  ...writeFiles({
    'm.yaml': 'version: 1\nrelease: http-public-url@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n',
    'p.cedar': 'permit (principal, action, resource);\n',
  }),
  tokens: tokenFile(`${TOKEN} agent-p\n`),
};
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

async function gate(flags: string[], listen?: string): Promise<HttpGate> {
  const g = await startHttpGate({
    home: makeHome(),
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--auth-token-file', files.tokens, ...flags],
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
    ...(listen !== undefined ? { listen } : {}),
  });
  gates.push(g);
  return g;
}

/** The 401's resource_metadata URL, and the metadata the gate serves at that URL's path. */
async function advertised(endpoint: string): Promise<{ www: string; metadataPath: string; doc: { resource: string } }> {
  const r = await post(endpoint, INIT);
  assert.equal(r.status, 401);
  const www = r.headers.get('www-authenticate')!;
  const m = /^Bearer resource_metadata="([^"]+)"$/.exec(www);
  assert.ok(m, www);
  const metadataPath = new URL(m[1]).pathname;
  const doc = await (await fetch(new URL(metadataPath, endpoint))).json();
  return { www: m[1], metadataPath, doc };
}

test('--public-url: the metadata and WWW-Authenticate name it (RFC 9728 path insertion), the listen address nowhere', async () => {
  const g = await gate(['--public-url', 'https://gw.example.com/team-a/mcp']);
  const a = await advertised(g.url);
  assert.equal(a.www, 'https://gw.example.com/.well-known/oauth-protected-resource/team-a/mcp');
  assert.equal(a.doc.resource, 'https://gw.example.com/team-a/mcp');
  assert.ok(!JSON.stringify(a).includes('127.0.0.1'));
});

test('without --public-url a loopback listen names itself, the metadata at its own path', async () => {
  const g = await gate([]);
  const a = await advertised(g.url);
  assert.equal(a.www, new URL('/.well-known/oauth-protected-resource/mcp', g.url).href);
  assert.equal(a.doc.resource, g.url);
});

test('a wildcard --listen with tokens: exit 2 without --public-url; with it, it serves and names the public URL', async () => {
  const base = ['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--auth-token-file', files.tokens];
  for (const listen of ['0.0.0.0:0', '[::]:0']) {
    const r = cloakpipe([...base, '--listen', listen, '--', 'true']);
    assert.equal(r.status, 2, listen);
    assert.match(r.stderr, /names no address a client can reach: give --public-url/, listen);
  }
  const g = await gate(['--public-url', 'https://mcp.example.com/mcp'], '0.0.0.0:0');
  const local = `http://127.0.0.1:${new URL(g.url).port}/mcp`;
  const a = await advertised(local);
  assert.equal(a.www, 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp');
  assert.equal(a.doc.resource, 'https://mcp.example.com/mcp');
});

test('a bad --public-url, or one without tokens, does not start (exit 2), never echoing the value', () => {
  const base = ['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar']];
  const cases: [string[], RegExp][] = [
    [['--auth-token-file', files.tokens, '--public-url', 'http://gw.example.com/mcp'], /--public-url must be https: \(http: only on a loopback host\)/],
    [['--auth-token-file', files.tokens, '--public-url', 'https://ops:s3cret-canary@gw.example.com/mcp'], /--public-url must not carry credentials/],
    [['--auth-token-file', files.tokens, '--public-url', 'https://gw.example.com/mcp?s3cret-canary'], /--public-url must have no query or fragment/],
    [['--auth-token-file', files.tokens, '--public-url', 'https://gw.example.com'], /--public-url names the MCP endpoint with its path/],
    [['--auth-token-file', files.tokens, '--public-url', 's3cret-canary'], /--public-url is not a URL/],
    [['--public-url', 'https://gw.example.com/mcp'], /--public-url needs --auth-token-file or --jwks/],
  ];
  for (const [flags, why] of cases) {
    const r = cloakpipe([...base, ...flags, '--', 'true']);
    assert.equal(r.status, 2, flags.join(' '));
    assert.match(r.stderr, why);
    assert.ok(!r.stderr.includes('s3cret-canary'), 'the value is not echoed');
  }
});
