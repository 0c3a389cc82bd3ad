// --max-in-flight over HTTP holds back the host's requests, not the messages that start no call:
// a notifications/cancelled for the call that fills the door, and the host's answer to a request
// the server sent in the middle of a call (sampling), reach the server while the door is full,
// however the cancel's body is framed (chunked, no Content-Length, as a streaming client or a
// proxy that re-frames bodies sends it). A large request still waits unread behind the bound.
// Held behind the bound, the cancel never arrived and the sampling call waited for its own answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, helperScript, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { post, rawSession, startHttpGate } from '../helpers/http-gate.js';

const CANARY = 'CANARY-sampled-while-full-8c21';

/** Resolves once `check` holds, polling; rejects after `ms` (a hung case fails). */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}


/** A gate at --max-in-flight 1 (and `flags`) before a server that logs each call's start and cancel. */
async function cancelRecordingGate(flags: string[] = []) {
  const file = join(tempDir(), 'cancel.log');
  const lines = () => {
    try {
      return readFileSync(file, 'utf8').trim().split('\n');
    } catch {
      return [];
    }
  };
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: cancel-recording@1\ntools:\n  wait: { effect: read, arguments: { n: { type: integer } } }\n', 'p.cedar': PERMIT_ALL });
  const g = await startHttpGate({
    home: makeHome(),
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    flags: ['--max-in-flight', '1', ...flags],
    upstream: [process.execPath, helperScript('cancel-recording-server.js')],
    env: { CANCEL_FILE: file },
  });
  return { g, lines };
}

test('--max-in-flight 1: the host answers the server\'s sampling request of the call in flight, and the call ends', { timeout: 60_000 }, async () => {
  const f = writeFiles({
    'm.yaml': 'version: 1\nrelease: everything-sampling@1\ntools:\n  trigger-sampling-request:\n    effect: read\n    arguments:\n      prompt: { type: string, max_len: 200, required: true }\n',
    'p.cedar': PERMIT_ALL,
  });
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-in-flight', '1'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  const client = new Client({ name: 'sampling-host', version: '1' }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'm', stopReason: 'endTurn', content: { type: 'text', text: `sampled ${CANARY}` } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(g.url)));
  // Bounded: held behind the bound, the answer never reached the server and this timed out.
  const r = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'a haiku' } }, undefined, { timeout: 20_000 });
  assert.ok(JSON.stringify(r).includes(CANARY), 'the host\'s answer reached the tool');
  await client.close();
  assert.equal(await g.stop(), 0);
});

test('--max-in-flight 1: the host cancels the call that fills the door, and the server hears of it', { timeout: 60_000 }, async () => {
  const { g, lines } = await cancelRecordingGate();
  const client = new Client({ name: 'cancelling-host', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(g.url)));
  const abort = new AbortController();
  const call = client.callTool({ name: 'wait', arguments: { n: 1 } }, undefined, { signal: abort.signal, timeout: 30_000 });
  await until(() => lines().includes('started 1'), 15_000, 'the call reached the server');
  abort.abort('the user stopped it');
  await assert.rejects(call);
  // The SDK client sends notifications/cancelled; the door is full with this very call.
  await until(() => lines().includes('cancelled 1'), 10_000, 'the server heard the cancel');
  await client.close();
  assert.equal(await g.stop(), 0);
});

test('--max-in-flight 1: a call the host cancels while it waits behind the bound never reaches the server', { timeout: 90_000 }, async () => {
  // The first call ends at the gate's bound (the SDK's server answers no cancelled request).
  const { g, lines } = await cancelRecordingGate(['--call-timeout', '3s']);
  const started = () => lines().filter((l) => l.startsWith('started '));
  const client = new Client({ name: 'cancelling-host', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(g.url)));
  const first = client.callTool({ name: 'wait', arguments: { n: 1 } }, undefined, { timeout: 30_000 }).catch((e: Error) => e);
  await until(() => started().length === 1, 15_000, 'the first call reached the server');
  const abort = new AbortController();
  const held = client.callTool({ name: 'wait', arguments: { n: 2 } }, undefined, { signal: abort.signal, timeout: 30_000 });
  await new Promise((r) => setTimeout(r, 300)); // its POST is sent (it waits behind the bound either way)
  abort.abort('the user stopped it');
  await assert.rejects(held);
  await first; // ended at --call-timeout: the door takes the next request
  const third = client.callTool({ name: 'wait', arguments: { n: 3 } }, undefined, { timeout: 30_000 }).catch((e: Error) => e);
  await until(() => started().length >= 2, 20_000, 'a second call reached the server');
  assert.deepEqual(started(), ['started 1', 'started 3'], 'the cancelled call never ran');
  await client.close();
  await third;
  assert.equal(await g.stop(), 0);
});

/** A POST whose body goes in chunks (no Content-Length): its status, or null while unanswered. */
function chunked(url: string, sid: string, parts: string[]): { status: () => number | null; done: Promise<number> } {
  const u = new URL(url);
  let status: number | null = null;
  const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid } });
  const done = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      status = res.statusCode!;
      res.resume();
      resolve(status);
    });
    req.on('error', reject);
  });
  for (const p of parts) req.write(p);
  req.end();
  assert.equal(req.getHeader('content-length'), undefined);
  return { status: () => status, done };
}

test('--max-in-flight 1: a chunked cancel of the call that fills the door reaches the server at once', { timeout: 60_000 }, async () => {
  const { g, lines } = await cancelRecordingGate();
  const sid = await rawSession(g.url);
  const call = (id: number, n: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait', arguments: { n } } });
  const first = post(g.url, call(10, 1), { 'Mcp-Session-Id': sid }).catch((e: Error) => e);
  await until(() => lines().includes('started 1'), 15_000, 'the call reached the server');
  // A large chunked request waits unread behind the bound (nothing of it runs).
  const padding = 'x'.repeat(200 * 1024);
  const big = chunked(g.url, sid, [JSON.stringify({ ...call(11, 2), params: { ...call(11, 2).params, _meta: { pad: padding } } }).slice(0, 100_000), JSON.stringify({ ...call(11, 2), params: { ...call(11, 2).params, _meta: { pad: padding } } }).slice(100_000)]);
  const cancel = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 10, reason: 'stopped' } });
  const c = chunked(g.url, sid, [cancel.slice(0, 20), cancel.slice(20)]);
  // Before, the cancel waited unread behind the call it ends, which never ends: neither came.
  await until(() => lines().includes('cancelled 1'), 10_000, 'the server heard the chunked cancel');
  assert.equal(await c.done, 202);
  await until(() => lines().includes('started 2'), 15_000, 'the held call ran once the first was cancelled');
  await g.stop();
  await Promise.allSettled([first, big.done]);
});
