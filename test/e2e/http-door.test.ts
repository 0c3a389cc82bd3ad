// `cloakpipe http-proxy` over raw HTTP and with the official SDK client: sessions, status codes
// and headers, tokens and origins, bounds, per-session task contexts and agents, and canaries.
// The upstream is the real @modelcontextprotocol/server-memory, one process per session.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MEMORY, makeHome, writeFiles, tempDir, cloakpipe, cloakpipeAsync, tokenFile } from '../helpers/cli.js';
import { canary } from '../helpers/capture.js';
import { httpClient, INIT, post, rawSession, startHttpGate, type HttpGate, type HttpGateOptions } from '../helpers/http-gate.js';

const MANIFEST = `version: 1
release: http-memory@1
tools:
  create_entities:
    effect: write
    arguments:
      entities: { type: array, max_items: 5, required: true, items: { type: object } }
  read_graph: { effect: read, arguments: {} }
  search_nodes:
    effect: read
    arguments:
      query: { type: string, pattern: "[A-Za-z ]{1,40}", required: true }
`;
const PERMIT = 'permit (principal, action, resource);\n';

const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT });
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

async function gate(extra: Partial<HttpGateOptions> = {}): Promise<HttpGate & { home: string }> {
  const home = extra.home ?? makeHome();
  const g = await startHttpGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
    ...extra,
  });
  gates.push(g);
  return Object.assign(g, { home });
}

function entries(home: string): any[] {
  return cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

const call = (id: number, name: string, args: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

test('initialize issues a 256-bit Mcp-Session-Id; requests without one get 400, with an unknown one 404', async () => {
  const g = await gate();
  const r = await post(g.url, INIT, { Accept: 'application/json' });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type')!, /^application\/json/);
  const body = await r.json();
  assert.equal(body.id, 1);
  assert.ok(body.result.serverInfo, 'the upstream answered the initialize');
  const sid = r.headers.get('mcp-session-id')!;
  assert.match(sid, /^[A-Za-z0-9_-]{43}$/);
  assert.equal((await post(g.url, call(2, 'read_graph', {}))).status, 400);
  assert.equal((await post(g.url, call(2, 'read_graph', {}), { 'Mcp-Session-Id': 'x'.repeat(43) })).status, 404);
  assert.equal((await post(g.url, call(2, 'read_graph', {}), { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '1999-01-01' })).status, 400);
  const n = await post(g.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid });
  assert.equal(n.status, 202);
});

test('a request is answered as JSON or as an SSE stream, as Accept allows; DELETE ends the session', async () => {
  const g = await gate();
  const sid = await rawSession(g.url);
  for (const version of ['2025-03-26', '2025-06-18', '2025-11-25']) {
    const j = await post(g.url, call(10, 'read_graph', {}), { 'Mcp-Session-Id': sid, Accept: 'application/json', 'MCP-Protocol-Version': version });
    assert.equal(j.status, 200);
    assert.ok((await j.json()).result, version);
  }
  const s = await post(g.url, call(11, 'read_graph', {}), { 'Mcp-Session-Id': sid, Accept: 'text/event-stream' });
  assert.equal(s.status, 200);
  assert.match(s.headers.get('content-type')!, /^text\/event-stream/);
  const events = (await s.text()).split('\n\n').filter((e) => e.trim() !== '');
  const last = JSON.parse(events.at(-1)!.split('\n').find((l) => l.startsWith('data: '))!.slice(6));
  assert.equal(last.id, 11);
  assert.ok(last.result);
  const d = await fetch(g.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
  assert.equal(d.status, 200);
  assert.equal((await post(g.url, call(12, 'read_graph', {}), { 'Mcp-Session-Id': sid })).status, 404);
});

test('refusals over HTTP: the manifest as on stdio, wire refusals 400, an oversize body 413, all recorded', async () => {
  const g = await gate({ flags: ['--max-body', '2048'] });
  const sid = await rawSession(g.url);
  const h = { 'Mcp-Session-Id': sid, Accept: 'application/json' };
  const undeclared = await (await post(g.url, call(3, 'delete_entities', { entityNames: ['x'] }), h)).json();
  assert.equal(undeclared.error.code, -32001);
  assert.equal(undeclared.error.data.reason, 'undeclared_tool');
  const invalid = await (await post(g.url, call(4, 'search_nodes', { query: 'a; rm -rf /' }), h)).json();
  assert.equal(invalid.error.data.reason, 'argument_invalid');
  const dup = await post(g.url, '{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/list"}', h);
  assert.equal(dup.status, 400);
  const dupBody = await dup.json();
  assert.equal(dupBody.error.data.reason, 'duplicate_key');
  assert.equal(typeof dupBody.error.data.entry, 'number');
  const notJson = await post(g.url, '{"jsonrpc":"2.0",', h);
  assert.equal(notJson.status, 400);
  const big = await post(g.url, call(7, 'search_nodes', { query: 'x'.repeat(4096) }), h);
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error.data.reason, 'frame_too_large');
  // The session survived all of it.
  assert.ok((await (await post(g.url, call(8, 'read_graph', {}), h)).json()).result);
  const reasons = entries(g.home).filter((e) => e.kind === 'decision' && e.outcome === 'refuse').map((e) => e.reason);
  assert.deepEqual(reasons.slice(0, 2), ['undeclared_tool', 'argument_invalid']);
  assert.equal(reasons.length, 5);
  assert.equal(reasons[4], 'frame_too_large');
});

test('wrong path 404, foreign Origin 403 (an allowed one passes), --max-sessions 503', async () => {
  const g = await gate({ flags: ['--max-sessions', '2', '--allowed-origin', 'http://localhost:6274'] });
  assert.equal((await post(g.url.replace(/\/mcp$/, '/other'), INIT)).status, 404);
  assert.equal((await post(g.url, INIT, { Origin: 'http://evil.example' })).status, 403);
  const ok = await post(g.url, INIT, { Origin: 'http://localhost:6274', Accept: 'application/json' });
  assert.equal(ok.status, 200);
  await ok.text();
  await rawSession(g.url);
  const third = await post(g.url, INIT, { Accept: 'application/json' });
  assert.equal(third.status, 503);
});

test('bearer tokens: 401 with RFC 9728 metadata, each session bound to its agent, entries name the agent', async () => {
  const alice = 'tok-alice-0123456789abcdef';
  const bob = 'tok-bob-0123456789abcdef01';
  const g = await gate({ flags: ['--auth-token-file', tokenFile(`# agents\n${alice} alice\n${bob} bob\n`)] });
  const none = await post(g.url, INIT);
  assert.equal(none.status, 401);
  const www = none.headers.get('www-authenticate')!;
  const meta = /resource_metadata="([^"]+)"/.exec(www)![1];
  const doc = await (await fetch(meta)).json();
  assert.equal(doc.resource, g.url);
  assert.equal((await post(g.url, INIT, { Authorization: `Bearer ${alice}x` })).status, 401);
  const sid = await rawSession(g.url, { Authorization: `Bearer ${alice}` });
  // Bob's token does not reach Alice's session.
  assert.equal((await post(g.url, call(2, 'read_graph', {}), { Authorization: `Bearer ${bob}`, 'Mcp-Session-Id': sid })).status, 404);
  const c = await httpClient(g.url, { Authorization: `Bearer ${bob}` });
  await c.callTool({ name: 'read_graph', arguments: {} });
  await c.close();
  const r = await post(g.url, call(3, 'read_graph', {}), { Authorization: `Bearer ${alice}`, 'Mcp-Session-Id': sid, Accept: 'application/json' });
  assert.ok((await r.json()).result);
  const decisions = entries(g.home).filter((e) => e.kind === 'decision');
  // Bob's try at Alice's session is his refusal (ADR 086), then his call, then Alice's.
  assert.deepEqual(decisions.map((e) => [e.agent, e.outcome, e.reason ?? null]), [['bob', 'refuse', 'invalid_request'], ['bob', 'allow', null], ['alice', 'allow', null]]);
  assert.ok(!g.stderr().includes(alice) && !g.stderr().includes(bob));
});

test("a token holder's refusals outside a decision are tied to it: malformed and oversize bodies, a fail_closed, each entry with its session and agent", async () => {
  const alice = 'tok-alice-0123456789abcdef';
  const t = writeFiles({ 'p.cedar': PERMIT });
  const g = await gate({ policy: t['p.cedar'], flags: ['--auth-token-file', tokenFile(`${alice} alice\n`), '--max-body', '2048'] });
  const auth = { Authorization: `Bearer ${alice}` };
  const sid = await rawSession(g.url, auth);
  const h = { ...auth, 'Mcp-Session-Id': sid, Accept: 'application/json' };
  assert.ok((await (await post(g.url, call(2, 'read_graph', {}), h)).json()).result);
  assert.equal((await post(g.url, '{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/list"}', h)).status, 400);
  assert.equal((await post(g.url, call(5, 'search_nodes', { query: 'x'.repeat(4096) }), h)).status, 413);
  writeFileSync(t['p.cedar'], 'permit (principal, action, resource'); // a broken policy: fail_closed
  assert.equal((await (await post(g.url, call(6, 'read_graph', {}), h)).json()).error.data.reason, 'fail_closed');
  assert.equal((await post(g.url, '{"jsonrpc":', auth)).status, 400); // no session named: the token's agent
  const all = entries(g.home).filter((e) => e.kind === 'decision');
  const session = all[0].session;
  assert.equal(typeof session, 'string');
  assert.deepEqual(
    all.map((e) => [e.outcome, e.reason ?? null, e.agent, e.session ?? null]),
    [
      ['allow', null, 'alice', session],
      ['refuse', 'duplicate_key', 'alice', session],
      ['refuse', 'frame_too_large', 'alice', session],
      ['refuse', 'fail_closed', 'alice', session],
      ['refuse', 'malformed_json', 'alice', null],
    ],
  );
});

test('a task context that stops loading mid-session: the call is fail_closed, and its entry still names the session and the agent', async () => {
  const t = writeFiles({ 'c.json': JSON.stringify({ task: { id: 'T-7', agent: 'carol' } }) });
  const g = await gate({ flags: ['--context', t['c.json']] });
  const sid = await rawSession(g.url);
  const h = { 'Mcp-Session-Id': sid, Accept: 'application/json' };
  assert.ok((await (await post(g.url, call(2, 'read_graph', {}), h)).json()).result);
  writeFileSync(t['c.json'], '{"task":');
  assert.equal((await (await post(g.url, call(3, 'read_graph', {}), h)).json()).error.data.reason, 'fail_closed');
  const all = entries(g.home).filter((e) => e.kind === 'decision');
  assert.deepEqual(
    all.map((e) => [e.outcome, e.agent, e.session === all[0].session]),
    [
      ['allow', 'carol', true],
      ['refuse', 'carol', true],
    ],
  );
});

test('a non-loopback --listen without tokens does not start (exit 2)', async () => {
  const r = await cloakpipeAsync(['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--listen', '0.0.0.0:0', '--', process.execPath, MEMORY]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /not loopback/);
});

test('a duration longer than a timer can wait (596h) is exit 2, not a timer of 1 ms (sessions ended at once, every call unknown, an epoch sealed each ms)', () => {
  for (const flag of ['--session-idle', '--call-timeout', '--anchor-interval']) {
    const r = cloakpipe(['http-proxy', '--home', makeHome(), '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--listen', '127.0.0.1:0', flag, '597h', '--', process.execPath, MEMORY], { timeout: 10_000 });
    assert.equal(r.status, 2, `${flag} 597h: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${flag}: at most 596h`));
  }
});

test('two sessions at once, each with its own task context (--context-dir + Cloakpipe-Task) and label', async () => {
  const dir = tempDir();
  const { writeFileSync } = await import('node:fs');
  writeFileSync(join(dir, 'T-basic.json'), JSON.stringify({ task: { id: 'T-basic', tier: 'basic' } }));
  writeFileSync(join(dir, 'T-premium.json'), JSON.stringify({ task: { id: 'T-premium', tier: 'premium' } }));
  const p = writeFiles({ 'p.cedar': `${PERMIT}@id("premium-writes")\nforbid (principal, action == Action::"call_tool", resource == Tool::"create_entities")\nunless { context.task.tier == "premium" };\n` });
  const g = await gate({ policy: p['p.cedar'], flags: ['--context-dir', dir] });
  const basic = await httpClient(g.url, { 'Cloakpipe-Task': 'T-basic' });
  const premium = await httpClient(g.url, { 'Cloakpipe-Task': 'T-premium' });
  const entity = { entities: [{ name: 'Ada', entityType: 'person', observations: [] }] };
  const [b, pr] = await Promise.allSettled([basic.callTool({ name: 'create_entities', arguments: entity }), premium.callTool({ name: 'create_entities', arguments: entity })]);
  assert.equal(pr.status, 'fulfilled');
  assert.equal(b.status, 'rejected');
  assert.ok((b as PromiseRejectedResult).reason instanceof McpError);
  assert.equal((((b as PromiseRejectedResult).reason as McpError).data as { reason: string }).reason, 'policy_denied');
  await basic.close();
  await premium.close();
  const decisions = entries(g.home).filter((e) => e.kind === 'decision');
  const byTask = new Map<string, any>(decisions.map((e) => [e.task, e]));
  assert.equal(byTask.get('T-basic').outcome, 'refuse');
  assert.equal(byTask.get('T-premium').outcome, 'allow');
  assert.notEqual(byTask.get('T-basic').session, byTask.get('T-premium').session);
  // No such task, or none named: the initialize is refused fail_closed.
  const tasks: Record<string, string>[] = [{ 'Cloakpipe-Task': 'T-missing' }, {}, { 'Cloakpipe-Task': '../T-basic' }];
  for (const h of tasks) {
    const r = await post(g.url, INIT, { Accept: 'application/json', ...h });
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.data.reason, 'fail_closed');
  }
});

test('an idle session ends after --session-idle', async () => {
  // 2 s: long enough that a loaded machine still sends notifications/initialized in time.
  const g = await gate({ flags: ['--session-idle', '2s'] });
  const sid = await rawSession(g.url);
  // Watched through the ledger, which does not touch the session (a request would keep it alive).
  const closedIdle = () => cloakpipe(['ledger', 'show', '--home', g.home, '--json']).stdout.trim().split('\n').some((l) => /"kind":"session"/.test(l) && /"reason":"idle"/.test(l));
  for (const end = Date.now() + 30_000; !closedIdle(); await new Promise((r) => setTimeout(r, 300))) assert.ok(Date.now() < end, 'the session never ended idle');
  assert.equal((await post(g.url, call(2, 'read_graph', {}), { 'Mcp-Session-Id': sid })).status, 404);
});

test('canaries in arguments never reach stderr or the ledger', async () => {
  const allowed = canary('http-arg');
  const refused = canary('http-refused');
  const g = await gate();
  const c = await httpClient(g.url);
  await c.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: [allowed] }] } });
  const graph = await c.callTool({ name: 'read_graph', arguments: {} });
  assert.ok(JSON.stringify(graph).includes(allowed), 'the canary reached the tool');
  await assert.rejects(c.callTool({ name: 'search_nodes', arguments: { query: refused } }));
  await c.close();
  assert.equal(await g.stop(), 0);
  const ledger = cloakpipe(['ledger', 'show', '--home', g.home, '--json']).stdout;
  const raw = readFileSync(join(g.home, 'ledger.db')).toString('latin1');
  for (const k of [allowed, refused]) {
    assert.ok(!g.stderr().includes(k), 'stderr');
    assert.ok(!ledger.includes(k), 'ledger');
    assert.ok(!raw.includes(k), 'ledger file');
  }
});

test('session entries: each MCP session is opened and closed in the ledger (deleted, idle, shutdown), which verifies and reports', async () => {
  const tokens = tokenFile('tok-a-0123456789abcdef agent-a\ntok-b-0123456789abcdef agent-b\ntok-c-0123456789abcdef agent-c\n');
  // 6 s idle: long enough that a loaded machine opens all three before b's first touch.
  const g = await gate({ flags: ['--auth-token-file', tokens, '--session-idle', '6s'] });
  const open = async (token: string) => rawSession(g.url, { Authorization: `Bearer ${token}-0123456789abcdef` });
  const a = await open('tok-a');
  const b = await open('tok-b');
  const c = await open('tok-c');
  const del = await fetch(g.url, { method: 'DELETE', headers: { Authorization: 'Bearer tok-a-0123456789abcdef', 'Mcp-Session-Id': a } });
  assert.equal(del.status, 200);
  // b stays busy (each request touches it); c is left alone until it is idle.
  for (let i = 0; i < 8; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const r = await post(g.url, call(10 + i, 'read_graph', {}), { Authorization: 'Bearer tok-b-0123456789abcdef', 'Mcp-Session-Id': b });
    assert.equal(r.status, 200);
    await r.text();
  }
  assert.equal((await post(g.url, call(99, 'read_graph', {}), { Authorization: 'Bearer tok-c-0123456789abcdef', 'Mcp-Session-Id': c })).status, 404);
  assert.equal(await g.stop(), 0);
  const all = entries(g.home);
  const sessions = all.filter((e) => e.kind === 'session');
  const opened = sessions.filter((e) => e.action === 'open');
  assert.deepEqual(opened.map((e) => e.agent), ['agent-a', 'agent-b', 'agent-c']);
  const closed = new Map(sessions.filter((e) => e.action === 'close').map((e) => [e.session, e.reason]));
  assert.deepEqual(opened.map((e) => closed.get(e.session)), ['deleted', 'shutdown', 'idle']);
  // The digest is the one on the session's decisions; the id itself is nowhere.
  const bDecisions = all.filter((e) => e.kind === 'decision' && e.agent === 'agent-b');
  assert.ok(bDecisions.length === 8 && bDecisions.every((e) => e.session === opened[1].session));
  const shown = cloakpipe(['ledger', 'show', '--home', g.home]).stdout;
  for (const id of [a, b, c]) assert.ok(!shown.includes(id) && !JSON.stringify(all).includes(id));
  assert.match(shown, /session\s+open\s+\w+\s+agent=agent-a/);
  // Every open entry comes before its close, and the close before the shutdown entry.
  const seqOf = (s: string, act: string) => sessions.find((e) => e.session === s && e.action === act).seq;
  for (const o of opened) assert.ok(seqOf(o.session, 'open') < seqOf(o.session, 'close'));
  assert.ok(Math.max(...sessions.map((e) => e.seq)) < all.find((e) => e.kind === 'shutdown').seq);
  const v = cloakpipe(['verify', '--home', g.home]);
  assert.equal(v.status, 0, v.stderr);
  // The scope report reads the same ledger (its facts skip kinds they do not use).
  const scope = writeFiles({
    's.yaml': `${MANIFEST}effects:\n  graph_read:\n    description: the graph is read\n    paths:\n      - id: gateway\n        kind: agent\n        description: through the gate\n        route: { via: gate, tool: read_graph }\n        mediator: { type: gate }\n`,
  });
  const report = cloakpipe(['scope', 'report', '--manifest', scope['s.yaml'], '--home', g.home, '--json']);
  assert.ok(report.status === 0 || report.status === 1, report.stderr);
  const ledger = JSON.parse(report.stdout).ledger;
  assert.equal(ledger.verified, true);
  assert.equal(ledger.entries, all.length);
});
