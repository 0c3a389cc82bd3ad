// A call's own event stream (SSE in answer to its POST) carries heartbeats while the call runs,
// as a GET stream does: a proxy between host and gate that cuts connections silent for longer
// than its idle timeout (here 22 s, above HEARTBEAT_MS) must not cut a long call. Real binary,
// server-everything's long-running operation behind it, the SDK client through a TCP proxy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, PERMIT_ALL, makeHome, writeFiles } from '../helpers/cli.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';
import { idleCuttingProxy } from '../helpers/idle-cutting-proxy.js';

const f = writeFiles({
  'm.yaml': 'version: 1\nrelease: http-post-heartbeat@1\ntools:\n  trigger-long-running-operation: { effect: read, arguments: { duration: { type: number }, steps: { type: integer } } }\n',
  'p.cedar': PERMIT_ALL,
});

test('a call silent for longer than a proxy idle timeout is answered through it: its stream carries heartbeats', { timeout: 120_000 }, async () => {
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, EVERYTHING] });
  const proxy = await idleCuttingProxy(g.url, 22_000);
  const client = await httpClient(proxy.url);
  try {
    // 32 s in two steps, no progress token: nothing of the call's own crosses the proxy until its answer.
    const r = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 32, steps: 2 } }, undefined, { timeout: 90_000 });
    assert.notEqual(r.isError, true);
    assert.match(JSON.stringify(r.content), /completed/i);
    assert.equal(proxy.cuts, 0, 'the proxy cut a silent connection');
  } finally {
    await client.close();
    await proxy.close();
    await g.stop();
  }
});

test('a call held behind --max-in-flight whose stream the heartbeat opened is told, on that stream, that its session ended', { timeout: 120_000 }, async () => {
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-in-flight', '1'], upstream: [process.execPath, EVERYTHING] });
  const transport = new StreamableHTTPClientTransport(new URL(g.url));
  const client = new Client({ name: 'held', version: '1' });
  await client.connect(transport);
  try {
    const long = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 24, steps: 1 } }, undefined, { timeout: 90_000 });
    const held = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 1 } }, undefined, { timeout: 90_000 });
    held.catch(() => undefined);
    // Past the first heartbeat the held call's stream is open (200, text/event-stream).
    await new Promise((r) => setTimeout(r, 17_000));
    await transport.terminateSession();
    await long;
    // Before, its stream ended with no answer and the client waited out its own timeout.
    await assert.rejects(held, /ended before this request was read/);
  } finally {
    await client.close();
    await g.stop();
  }
});
