// A session that ends (DELETE) while a request of its host waits behind --max-in-flight, read but
// not yet taken by the relay: that request never runs, and its POST is told the session ended,
// naming its id. Before, the door ended that POST with an empty 200 (no content type, no body),
// which a client cannot read as an answer or an error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { post, rawSession, startHttpGate } from '../helpers/http-gate.js';
import { CANARY, startRawUpstream, type RawUpstream } from '../helpers/misbehaving-http-upstream.js';

let raw: RawUpstream | undefined;
after(async () => {
  await raw?.close();
});

test('DELETE while a call waits behind --max-in-flight: the held call is answered, the waiting one gets 404 with its id and never runs', { timeout: 60_000 }, async () => {
  raw = await startRawUpstream();
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: ended@1\ntools:\n  held: { effect: read, arguments: { n: { type: integer } } }\n', 'p.cedar': PERMIT_ALL });
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-in-flight', '1', '--upstream-url', raw.url], upstream: [] });
  const sid = await rawSession(g.url);
  const h = { 'Mcp-Session-Id': sid, Accept: 'application/json' };
  const first = post(g.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'held', arguments: { n: 1 } } }, h);
  await raw.heldCount(1);
  const second = post(g.url, { jsonrpc: '2.0', id: 'second-7', method: 'tools/call', params: { name: 'held', arguments: { n: 2 } } }, h);
  await new Promise((r) => setTimeout(r, 300)); // its body is sent
  const del = await fetch(g.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
  assert.equal(del.status, 200);
  raw.held.shift()!();
  const a = await first;
  assert.equal(a.status, 200);
  assert.ok((await a.text()).includes(`held ${CANARY}`));
  const b = await second;
  assert.equal(b.status, 404);
  assert.match(b.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await b.json()) as { id: unknown; error: { code: number; message: string } };
  assert.equal(body.id, 'second-7');
  assert.equal(body.error.code, -32001);
  assert.equal(raw.held.length, 0, 'the waiting call never reached the server');
  const calls = raw.seen.filter((s) => s.method === 'POST').length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(raw.seen.filter((s) => s.method === 'POST').length, calls);
  assert.equal(await g.stop(), 0);
});
