// An upstream at a URL that answers a notification (which wants 202, no body) with a body, here
// an event stream it never ends: the gate does not read it, so the socket is not held. Before,
// each notification the host sent kept one more socket open until the session ended (300
// notifications: 300 descriptors), a way to run the gate out of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { listenLocal } from '../helpers/local-http.js';
import { HttpUpstreamTransport } from '../../src/doors/upstream/http.js';

test('a body the server sends for a notification is not read: its connection is closed, not held', async () => {
  let open = 0;
  let closed = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      open++;
      res.on('close', () => closed++);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': held open\n\n'); // and never ended
    });
  });
  const local = await listenLocal(server);
  const t = new HttpUpstreamTransport({ url: new URL(local.url) });
  await t.start();
  for (let i = 0; i < 5; i++) t.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: i } }));
  const deadline = Date.now() + 5000;
  while ((open < 5 || closed < 5) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.equal(open, 5);
  assert.equal(closed, 5, 'every such connection is closed by the gate');
  await t.close();
  server.closeAllConnections();
  await local.close();
});

test("a request's event stream the server holds open after the reply is closed once the reply is in", async () => {
  let closed = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const { id } = JSON.parse(body) as { id: number };
      res.on('close', () => closed++);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result: {} })}\n\n`); // and never ended
    });
  });
  const local = await listenLocal(server);
  const t = new HttpUpstreamTransport({ url: new URL(local.url) });
  const replies: string[] = [];
  t.onframe = (f) => void (f.kind === 'frame' && replies.push(Buffer.from(f.bytes).toString()));
  await t.start();
  for (let i = 1; i <= 5; i++) t.send(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' }));
  const deadline = Date.now() + 5000;
  while ((replies.length < 5 || closed < 5) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.equal(replies.length, 5, 'every reply delivered');
  assert.equal(closed, 5, 'every stream closed by the gate after its reply');
  await t.close();
  await local.close();
});
