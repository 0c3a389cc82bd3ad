// --upstream-header-file: the remote upstream's credentials come from a 0600 file instead of the
// command line (which `ps` shows every local user). Canary: the values reach every upstream
// request (positive control) and nothing else: not the gate's command line, its stderr, any file
// of the home (ledger, operations, WAL), the spans an OpenTelemetry exporter receives, the
// host's answers; a bad file is exit 2 naming the line, never the value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cloakpipe, helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { call, startGate } from '../helpers/gate.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';
import { CANARY, TOOLS, startRawUpstream } from '../helpers/misbehaving-http-upstream.js';

const TOKEN = 'CANARY-header-file-token-1c9e';
const KEY = 'CANARY-header-file-key-8a02';
const MANIFEST = `version: 1\nrelease: raw-http@1\ntools:\n${TOOLS.map((t) => `  ${t}: { effect: write, arguments: {} }\n`).join('')}`;

function headerFile(text: string, mode = 0o600): string {
  const p = join(tempDir(), 'upstream.headers');
  writeFileSync(p, text, { mode });
  chmodSync(p, mode);
  return p;
}

/** Every byte of every file under dir, as latin1 (the canaries are ASCII). */
function allBytes(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out += statSync(p).isDirectory() ? allBytes(p) : readFileSync(p).toString('latin1');
  }
  return out;
}

/** Neither credential in the gate's stderr, its home's files, the ledger, the spans or the host's answers. */
function noCredentialIn(home: string, spans: string, stderr: string, answers: string[]): void {
  const ledger = cloakpipe(['ledger', 'show', '--home', home, '--json']);
  assert.equal(ledger.status, 0, ledger.stderr);
  assert.ok(ledger.stdout.includes('"unknown"'), 'the bad answers are entries');
  assert.ok(existsSync(spans) && readFileSync(spans, 'utf8').length > 0, 'spans were exported');
  const outputs = { stderr, home: allBytes(home), ledger: ledger.stdout, spans: readFileSync(spans, 'utf8'), answers: answers.join('\n') };
  for (const [where, text] of Object.entries(outputs)) for (const s of [TOKEN, KEY]) assert.ok(!text.includes(s), `${where} holds a credential`);
}

test('mcp-proxy --upstream-header-file: the headers reach every upstream request and no command line, log, span, entry or answer', async () => {
  const raw = await startRawUpstream();
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const spans = join(tempDir(), 'spans.jsonl');
  const file = headerFile(`# the vendor's credentials\nAuthorization: Bearer ${TOKEN}\r\nX-Api-Key: ${KEY}\n`);
  const gate = await startGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--upstream-url', raw.url, '--upstream-header-file', file, '--upstream-header', 'X-Tenant: acme', '--call-timeout', '60s'],
    upstream: [],
    env: { CLOAKPIPE_TEST_SPANS: spans },
    node: ['--import', pathToFileURL(helperScript('otel-preload.js')).href],
  }).catch(async (e) => {
    await raw.close(); // a gate that does not start must not leave the server holding the run open
    throw e;
  });
  const answers: string[] = [];
  try {
    // What `ps` shows: the gate's whole command line holds the file's path, not its values.
    const cmdline = readFileSync(`/proc/${gate.pid}/cmdline`, 'latin1');
    assert.ok(cmdline.includes(file));
    for (const s of [TOKEN, KEY]) assert.ok(!cmdline.includes(s), 'a credential on the command line');
    for (const tool of ['ok', 'ok_sse', 'wrong_type', 'status_500', 'dup_key']) {
      const r = await call(gate, tool, {});
      answers.push(JSON.stringify(r));
      if (tool.startsWith('ok')) assert.ok(r.ok && r.text === `${tool} ${CANARY}`, JSON.stringify(r));
      else assert.ok(!r.ok && r.code === -32003, JSON.stringify(r));
    }
    answers.push(JSON.stringify(await gate.client.listTools()));
  } finally {
    await gate.close();
    await raw.close();
  }
  // Positive control: every request upstream carried both file headers and the flag's one.
  assert.ok(raw.seen.length >= 7);
  for (const r of raw.seen) {
    assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(r.headers['x-api-key'], KEY);
    assert.equal(r.headers['x-tenant'], 'acme');
  }
  noCredentialIn(home, spans, gate.stderr(), answers);
});

test('http-proxy --upstream-header-file: the headers go upstream, and to no command line, log, span, entry or answer', async () => {
  const raw = await startRawUpstream();
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const spans = join(tempDir(), 'spans.jsonl');
  const file = headerFile(`Authorization: Bearer ${TOKEN}\nX-Api-Key: ${KEY}\n`);
  const g = await startHttpGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--upstream-url', raw.url, '--upstream-header-file', file, '--call-timeout', '60s'],
    upstream: [],
    env: { CLOAKPIPE_TEST_SPANS: spans },
    node: ['--import', pathToFileURL(helperScript('otel-preload.js')).href],
  }).catch(async (e) => {
    await raw.close();
    throw e;
  });
  const answers: string[] = [];
  try {
    const cmdline = readFileSync(`/proc/${g.child.pid}/cmdline`, 'latin1');
    assert.ok(cmdline.includes(file));
    for (const s of [TOKEN, KEY]) assert.ok(!cmdline.includes(s), 'a credential on the command line');
    // What the host's HTTP exchange carries, headers included.
    const c = await httpClient(g.url);
    for (const tool of ['ok', 'ok_sse', 'wrong_type', 'status_500']) {
      const r = await c.callTool({ name: tool, arguments: {} }).then(
        (v) => v,
        (e: Error) => ({ error: e.message }),
      );
      answers.push(JSON.stringify(r));
      if (tool.startsWith('ok')) assert.ok(JSON.stringify(r).includes(`${tool} ${CANARY}`), JSON.stringify(r));
      else assert.match(JSON.stringify(r), /outcome unknown/);
    }
    await c.close();
    const init = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    answers.push(JSON.stringify([...init.headers]), await init.text());
  } finally {
    assert.equal(await g.stop(), 0);
    await raw.close();
  }
  assert.ok(raw.seen.length >= 5);
  for (const r of raw.seen) {
    assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(r.headers['x-api-key'], KEY);
  }
  noCredentialIn(home, spans, g.stderr(), answers);
});

test('--upstream-header-file: a file others can read, a bad line, a reserved name or a header given twice is exit 2, never echoing a value', () => {
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const cases: [string, number, string[], RegExp][] = [
    [`Authorization: Bearer ${TOKEN}\n`, 0o644, [], /others may read or write it \(mode 0644; it holds credentials: chmod 600 it\)/],
    [`X-Ok: 1\nX-Key: a\rInjected: ${TOKEN}\n`, 0o600, [], /line 2: holds a CR inside the line/],
    [`Host: ${TOKEN}\n`, 0o600, [], /line 1: Host: the gate sets this header itself/],
    [`Mcp-Session-Id: ${TOKEN}\n`, 0o600, [], /the gate sets this header itself/],
    [`Bearer ${TOKEN}\n`, 0o600, [], /line 1 must be "Name: value"/],
    [`Authorization: Bearer ${TOKEN}\n`, 0o600, ['--upstream-header', `authorization: ${KEY}`], /authorization is given twice/],
  ];
  for (const [text, mode, extra, msg] of cases) {
    for (const cmd of ['mcp-proxy', 'http-proxy']) {
      const r = cloakpipe([cmd, '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--upstream-url', 'http://127.0.0.1:1/mcp', '--upstream-header-file', headerFile(text, mode), ...extra]);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, msg);
      for (const s of [TOKEN, KEY]) assert.ok(!r.stderr.includes(s), r.stderr);
    }
  }
  const alone = cloakpipe(['mcp-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--upstream-header-file', headerFile('X-A: b\n'), '--', 'node']);
  assert.equal(alone.status, 2);
  assert.match(alone.stderr, /--upstream-header-file needs --upstream-url/);
});

test('mcp-proxy --config: "upstream-header-file" in the file is a path beside it, checked the same way', async () => {
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const dir = tempDir();
  writeFileSync(join(dir, 'vendor.headers'), `Authorization: Bearer ${TOKEN}\n`, { mode: 0o644 });
  chmodSync(join(dir, 'vendor.headers'), 0o644);
  const cfg = join(dir, 'gate.json');
  writeFileSync(cfg, JSON.stringify({ flags: { manifest: files['m.yaml'], policy: files['p.cedar'], 'upstream-url': 'http://127.0.0.1:1/mcp', 'upstream-header-file': 'vendor.headers' } }));
  const r = cloakpipe(['mcp-proxy', '--home', makeHome(), '--config', cfg]);
  assert.equal(r.status, 2, r.stderr);
  assert.ok(r.stderr.includes(`--upstream-header-file ${join(dir, 'vendor.headers')}: others may read or write it`), r.stderr);
  assert.ok(!r.stderr.includes(TOKEN));
});
