// What the gate lets through from a remote upstream that misbehaves on purpose (the HTTP side of
// product.md 7a): every answer it cannot read (wrong content type, broken or cut SSE, another
// event type, 5xx, a body or an event over the bound, a forged id, a duplicate key, no body)
// ends that call at once with -32003 outcome unknown, recorded, never forwarded; a server that
// forgets the session ends the gate session. The --upstream-header value and the host's own
// Authorization: the first reaches every upstream request and nothing else, the second never.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeHome, writeFiles, PERMIT_ALL, cloakpipe, tempDir, tokenFile } from '../helpers/cli.js';
import { startGate, type RunningGate } from '../helpers/gate.js';
import { httpClient, post, startHttpGate } from '../helpers/http-gate.js';
import { CANARY, SESSION, TOOLS, startRawUpstream, type RawUpstream } from '../helpers/misbehaving-http-upstream.js';

const HEADER_SECRET = 'CANARY-upstream-header-77b2';
const HOST_TOKEN = 'CANARY-host-token-5e0c';
const MANIFEST = `version: 1\nrelease: raw-http@1\ntools:\n${TOOLS.map((t) => `  ${t}: { effect: write, arguments: {} }\n`).join('')}`;
const BAD = ['wrong_type', 'sse_bad_field', 'sse_cut', 'sse_other_event', 'status_500', 'huge_declared', 'huge_chunked', 'huge_event', 'forged_id', 'dup_key', 'no_body'];

let raw: RawUpstream;
let gate: RunningGate | undefined;
let stdioErr: () => string = () => '';
let home: string;
let files: Record<string, string>;

before(async () => {
  raw = await startRawUpstream();
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  home = makeHome();
  gate = await startGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--upstream-url', raw.url, '--upstream-header', `X-Upstream-Key: ${HEADER_SECRET}`, '--call-timeout', '120s'],
    upstream: [],
  });
  stdioErr = gate.stderr;
});

after(async () => {
  await gate?.close();
  await raw?.close();
});

const text = (r: any) => r.content[0].text as string;

test('--upstream-url: good answers as JSON and as SSE (comments, id, retry, CRLF) pass through re-serialized', async () => {
  assert.equal(text(await gate!.client.callTool({ name: 'ok', arguments: {} })), `ok ${CANARY}`);
  assert.equal(text(await gate!.client.callTool({ name: 'ok_sse', arguments: {} })), `ok_sse ${CANARY}`);
});

for (const tool of BAD) {
  test(`--upstream-url: ${tool} ends the call at once with -32003 outcome unknown, never forwarded`, async () => {
    const e = await gate!.client.callTool({ name: tool, arguments: {} }).then(
      (r) => assert.fail(`answered ${JSON.stringify(r)}`),
      (x: unknown) => x,
    );
    assert.ok(e instanceof McpError);
    assert.equal(e.code, -32003);
    // "error", not "timeout": the transport knew the answer was not coming.
    assert.match(e.message, /outcome unknown \(error\)/);
    assert.equal((e.data as { reason?: string } | undefined)?.reason, 'outcome_unknown');
  });
}

test('--upstream-url: the session id and protocol version go on every request after initialize, with the header; nothing else of ours', () => {
  const after = raw.seen.slice(1);
  assert.ok(after.length > BAD.length);
  for (const r of raw.seen) assert.equal(r.headers['x-upstream-key'], HEADER_SECRET);
  for (const r of after) {
    assert.equal(r.headers['mcp-session-id'], SESSION);
    assert.match(String(r.headers['mcp-protocol-version']), /^20\d\d-\d\d-\d\d$/);
  }
  assert.ok(raw.seen.every((r) => r.headers.authorization === undefined));
});

test('--upstream-url: a server that forgets the session (404) ends the call unknown and the gate session with it', async () => {
  const e = await gate!.client.callTool({ name: 'forget_session', arguments: {} }).then(
    () => assert.fail('answered'),
    (x: unknown) => x as McpError,
  );
  assert.equal(e.code, -32003);
  assert.match(e.message, /outcome unknown \(upstream_exit\)/);
  // The upstream is gone: the stdio gate ends, as it does when an upstream process exits.
  await new Promise<void>((resolve) => {
    const t = gate!.client.transport as unknown as { _process?: { exitCode: number | null; once: (e: string, f: () => void) => void } };
    if (t._process?.exitCode !== null && t._process?.exitCode !== undefined) return resolve();
    t._process?.once('exit', () => resolve());
  });
  gate = undefined;
  assert.ok(raw.seen.some((r) => r.method === 'POST' && r.headers['mcp-session-id'] === SESSION));
});

test('--upstream-url: the ledger verifies, records every bad answer as an unknown result, holds no header value or payload', () => {
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stderr);
  const shown = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout;
  const entries = shown.trim().split('\n').map((l) => JSON.parse(l));
  const unknown = entries.filter((e) => e.kind === 'result' && e.outcome === 'unknown');
  assert.equal(unknown.length, BAD.length + 1);
  const ops = cloakpipe(['ops', 'list', '--home', home, '--state', 'unknown', '--json']);
  assert.equal(ops.status, 0, ops.stderr);
  assert.equal(ops.stdout.trim().split('\n').filter(Boolean).length >= 1, true);
  for (const secret of [HEADER_SECRET, CANARY]) assert.ok(!shown.includes(secret));
});

test('--upstream-url: the gate never logs the header value or a payload, and names each dropped answer by digest', () => {
  const err = stdioErr();
  for (const secret of [HEADER_SECRET, CANARY]) assert.ok(!err.includes(secret), `stderr holds ${secret}`);
  assert.match(err, /upstream_message_dropped/);
  assert.match(err, /the server no longer knows the session/);
});

test('http-proxy --upstream-url: the host\'s Authorization stays at the gate; the --upstream-header goes upstream; stderr holds neither', async () => {
  const upstream = await startRawUpstream();
  const dir = tempDir();
  const tokens = tokenFile(`${HOST_TOKEN} host-agent\n`);
  const g = await startHttpGate({
    home: makeHome(),
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--auth-token-file', tokens, '--upstream-url', upstream.url, '--upstream-header', `X-Upstream-Key: ${HEADER_SECRET}`],
    upstream: [],
  });
  try {
    const c = await httpClient(g.url, { Authorization: `Bearer ${HOST_TOKEN}` });
    assert.equal(text(await c.callTool({ name: 'ok', arguments: {} })), `ok ${CANARY}`);
    assert.ok(upstream.seen.length >= 3);
    for (const r of upstream.seen) {
      assert.equal(r.headers.authorization, undefined);
      assert.equal(r.headers['x-upstream-key'], HEADER_SECRET);
      assert.ok(!JSON.stringify(r.headers).includes(HOST_TOKEN));
    }
    // The server forgets the session: the gate session ends, the host's id is no longer live.
    const sid = (c.transport as unknown as { sessionId: string }).sessionId;
    await assert.rejects(c.callTool({ name: 'forget_session', arguments: {} }), (e: McpError) => e.code === -32003);
    for (let i = 0; i < 50; i++) {
      const r = await post(g.url, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { Authorization: `Bearer ${HOST_TOKEN}`, 'Mcp-Session-Id': sid });
      await r.text();
      if (r.status === 404) break;
      assert.ok(i < 49, `still ${r.status}`);
      await new Promise((r2) => setTimeout(r2, 50));
    }
    await c.close().catch(() => undefined);
  } finally {
    assert.equal(await g.stop(), 0);
    await upstream.close();
  }
  for (const secret of [HEADER_SECRET, HOST_TOKEN, CANARY]) assert.ok(!g.stderr().includes(secret), `stderr holds ${secret}`);
});

test('--upstream-header: a malformed or reserved header is exit 2 and the value is never echoed', () => {
  for (const h of [`Bad Name: ${HEADER_SECRET}`, `Mcp-Session-Id: ${HEADER_SECRET}`, `X-Key: a\r\nInjected: ${HEADER_SECRET}`, 'X-Key:']) {
    const r = cloakpipe(['mcp-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--upstream-url', 'http://127.0.0.1:1/mcp', '--upstream-header', h]);
    assert.equal(r.status, 2, r.stderr);
    assert.ok(!r.stderr.includes(HEADER_SECRET), r.stderr);
  }
  const creds = cloakpipe(['mcp-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--upstream-url', `http://u:${HEADER_SECRET}@127.0.0.1:1/mcp`]);
  assert.equal(creds.status, 2);
  assert.ok(!creds.stderr.includes(HEADER_SECRET), creds.stderr);
  const both = cloakpipe(['mcp-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--upstream-url', 'http://127.0.0.1:1/mcp', '--', 'node']);
  assert.equal(both.status, 2);
  assert.match(both.stderr, /named twice/);
});
