// An upstream at a URL that answers the messages which want no answer (notifications: 202, no
// body) with a JSON body it never ends. The gate has nothing to read there; each such answer it
// drained kept one connection to the upstream (and a descriptor in the gate) for as long as the
// upstream liked: one more with each notification the host sent. Through the real binary: a host
// sends notifications over HTTP, and every such connection must be closed by the gate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { listenLocal } from '../helpers/local-http.js';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { post, rawSession, startHttpGate } from '../helpers/http-gate.js';

const NOTIFICATIONS = 40;

test(`${NOTIFICATIONS} notifications answered with a JSON body the upstream never ends: the gate closes every such connection`, { timeout: 60_000 }, async () => {
  const held = new Set<ServerResponse>();
  let answered = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const m = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (m.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'unended-1' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'unended', version: '1' } } }));
      }
      if (m.id !== undefined) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }));
      }
      // A notification: a body begun and never ended (chunked, no length).
      answered++;
      held.add(res);
      res.on('close', () => held.delete(res));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"jsonrpc":"2.0"');
    });
  });
  const local = await listenLocal(server);
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: unended@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--upstream-url', local.url], upstream: [] });
  try {
    const sid = await rawSession(g.url);
    for (let i = 0; i < NOTIFICATIONS; i++) {
      const r = await post(g.url, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, { 'Mcp-Session-Id': sid });
      assert.equal(r.status, 202);
    }
    const deadline = Date.now() + 20_000;
    while ((answered < NOTIFICATIONS + 1 || held.size > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(answered, NOTIFICATIONS + 1, 'notifications/initialized and every one the host sent reached the upstream');
    assert.equal(held.size, 0, `${held.size} answers the gate still holds open`);
    // The session goes on: a request is still answered.
    const ping = await post(g.url, { jsonrpc: '2.0', id: 9, method: 'ping' }, { 'Mcp-Session-Id': sid, Accept: 'application/json' });
    assert.deepEqual(await ping.json(), { jsonrpc: '2.0', id: 9, result: {} });
  } finally {
    assert.equal(await g.stop(), 0);
    server.closeAllConnections();
    await local.close();
  }
});
