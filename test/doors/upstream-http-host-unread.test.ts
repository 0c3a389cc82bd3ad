// A host that stops reading the gate's stdout while a remote server (--upstream-url) streams
// notifications on a call's event stream: the HTTP upstream transport could not pause, so the
// gate read the whole stream and queued it for the host, growing without end. Now, past 8 MiB
// the host has not read, the gate stops reading the server's streams until the host catches up,
// as it does a stdio server's; nothing is lost. Real binary, raw host, a raw Streamable HTTP
// server that writes its stream only as fast as its socket takes it (as a server should).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { listenLocal } from '../helpers/local-http.js';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { growthWhileUnread, readFloodInOrder } from '../helpers/proc-figures.js';

const MANIFEST = `version: 1
release: upstream-http-host-unread@1
tools:
  flood: { effect: read, arguments: { count: { type: integer }, bytes: { type: integer } } }
`;
const MIB = 1024 * 1024;
const FLOOD = 192; // notifications of 1 MiB each

/** Streams `count` notifications then the call's answer on `res`, each write waiting for the socket. */
async function flood(res: ServerResponse, id: unknown, count: number, bytes: number, sent: { n: number }): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const data = 'f'.repeat(bytes);
  const event = (m: object) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
  for (let n = 0; n < count; n++) {
    sent.n++;
    if (!res.write(event({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { n, data } } }))) {
      await new Promise((r) => res.once('drain', r));
    }
  }
  res.end(event({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `flooded ${count}` }] } }));
}

test('a host that reads nothing while a remote server streams to it: the gate stops reading the stream instead of holding it', { timeout: 300_000 }, async () => {
  const sent = { n: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const m = JSON.parse(body) as { id?: unknown; method: string; params?: any };
      if (m.id === undefined) return void res.writeHead(202).end();
      const json = (result: object) => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'flood-1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
      };
      if (m.method === 'initialize') return json({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'flooding-http', version: '1' } });
      if (m.method === 'ping') return json({ _meta: { sent: sent.n } });
      if (m.method === 'tools/call' && m.params?.name === 'flood') return void flood(res, m.id, m.params.arguments.count, m.params.arguments.bytes, sent);
      json({});
    });
  });
  const local = await listenLocal(server);
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--upstream-url', local.url], upstream: [] });
  try {
    await gate.initialize();
    const grown = await growthWhileUnread(gate, FLOOD);
    assert.ok(grown < 64 * MIB, `the gate grew by ${Math.round(grown / MIB)} MiB while the host read nothing (${FLOOD} MiB sent its way)`);

    await readFloodInOrder(gate, 'flood', FLOOD); // the host reads again
    assert.equal(await gate.end(), 0);
  } finally {
    await local.close();
  }
});
