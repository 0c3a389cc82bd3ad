// A call's event stream cut by the network just before its answer. The door gives its events no
// ids (ADR 115), so the SDK client does not reconnect for it: the call is neither sent twice nor
// answered twice; the client is told (its POST fails, or its own timeout), the ledger holds the call's outcome,
// and the gate's log says an answer reached nobody (before, nothing did). A GET that names a
// Last-Event-ID gets a fresh stream that replays nothing. Real binary, server-memory behind it,
// the SDK client through a proxy that cuts the stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, MEMORY, PERMIT_ALL, cloakpipe, makeHome, writeFiles } from '../helpers/cli.js';
import { httpClient, post, rawSession, startHttpGate } from '../helpers/http-gate.js';
import { startCuttingProxy } from '../helpers/cutting-proxy.js';

const f = writeFiles({
  'm.yaml': 'version: 1\nrelease: http-answer-cut@1\ntools:\n  create_entities: { effect: write, arguments: { entities: { type: array, max_items: 5, items: { type: object }, required: true } } }\n  read_graph: { effect: read }\n',
  'slow.yaml': 'version: 1\nrelease: http-answer-cut-slow@1\ntools:\n  trigger-long-running-operation: { effect: read, arguments: { duration: { type: number }, steps: { type: integer } } }\n',
  'p.cedar': PERMIT_ALL,
});

test('a call whose answer the network cut runs once, its client is told, and the ledger holds its outcome', { timeout: 60_000 }, async () => {
  const home = makeHome();
  const g = await startHttpGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, MEMORY] });
  const proxy = await startCuttingProxy(g.url, (body) => body.includes('"create_entities"'));
  const client = await httpClient(proxy.url);
  try {
    const entities = { entities: [{ name: 'Ada', entityType: 'person', observations: [] }] };
    // Told at once when the cut came before the stream's headers (fetch failed), else by its timeout.
    await assert.rejects(client.callTool({ name: 'create_entities', arguments: entities }, undefined, { timeout: 5_000 }), /fetch failed|timed out/);
    assert.equal(proxy.cuts, 1);
    // The session goes on; the write ran once (never resent by the client).
    const graph = await client.callTool({ name: 'read_graph', arguments: {} });
    const names = (graph.structuredContent as { entities: { name: string }[] }).entities.map((e) => e.name);
    assert.deepEqual(names, ['Ada']);
    assert.equal(proxy.seen.filter((r) => r.body?.includes('"create_entities"')).length, 1, 'the call was sent once');
    const entries = cloakpipe(['ledger', 'show', '--home', home, '--json'])
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; seq: number; tool?: string; decision?: number; outcome?: string });
    const decision = entries.find((e) => e.kind === 'decision' && e.tool === 'create_entities');
    assert.ok(decision, 'its decision is in the ledger');
    assert.deepEqual(entries.filter((e) => e.kind === 'result' && e.decision === decision.seq).map((e) => e.outcome), ['ok'], 'its outcome is in the ledger, once');
  } finally {
    await client.close();
    await proxy.close();
    await g.stop();
  }
});

test("an answer whose POST is gone (its host hung up mid-call) is named in the gate's log, by its size alone", { timeout: 60_000 }, async () => {
  const g = await startHttpGate({ home: makeHome(), manifest: f['slow.yaml'], policy: f['p.cedar'], upstream: [process.execPath, EVERYTHING] });
  try {
    const sid = await rawSession(g.url);
    const ac = new AbortController();
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 1 } } };
    const r = post(g.url, call, { 'Mcp-Session-Id': sid, Accept: 'application/json' }, ac.signal);
    await new Promise((res) => setTimeout(res, 500));
    ac.abort();
    await assert.rejects(r);
    // Before, the answer was dropped without a word: only the ledger knew the call had ended.
    for (const end = Date.now() + 20_000; !/"event":"host_answer_undelivered","cause":"post_gone","bytes":\d+/.test(g.stderr()); await new Promise((res) => setTimeout(res, 100)))
      assert.ok(Date.now() < end, `no log line names the lost answer: ${g.stderr()}`);
  } finally {
    await g.stop();
  }
});

test('a GET naming a Last-Event-ID gets a fresh stream: nothing is replayed or refused', { timeout: 30_000 }, async () => {
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, MEMORY] });
  try {
    const sid = await rawSession(g.url);
    const ac = new AbortController();
    const r = await fetch(g.url, { headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'Last-Event-ID': 'no-such-event' }, signal: ac.signal });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    ac.abort();
  } finally {
    await g.stop();
  }
});
