// --max-in-flight over HTTP lets a cancel through while the door is full, however its body is
// framed: a notifications/cancelled sent chunked (no Content-Length, as a streaming client or a
// proxy that re-frames bodies sends it) is read and reaches the server at once, as one with a
// length does. A large chunked request still waits unread behind the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { helperScript, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { post, rawSession, startHttpGate } from '../helpers/http-gate.js';

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

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
    flags: ['--max-in-flight', '1'],
    upstream: [process.execPath, helperScript('cancel-recording-server.js')],
    env: { CANCEL_FILE: file },
  });
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
