// Things that go wrong in the middle of a call over HTTP: the upstream is killed (the host is
// told the outcome is unknown, -32003, and the ledger says so), the host hangs up on its POST
// (the call still settles in the ledger, and the session goes on), SIGTERM while a call runs
// (it finishes within the 10 s grace, or ends unknown at it, recorded before the shutdown
// entry), and a session deleted while its call runs (its upstream still counts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { ledgerOfAsync } from '../helpers/gate.js';
import { httpClient, post, rawSession, startHttpGate, type HttpGate } from '../helpers/http-gate.js';

const MANIFEST = `version: 1
release: http-midcall@1
tools:
  echo:
    effect: read
    arguments:
      message: { type: string, max_len: 200, required: true }
  trigger-long-running-operation:
    effect: read
    arguments:
      duration: { type: number, maximum: 30 }
      steps: { type: integer, maximum: 10 }
`;
const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
const gates: HttpGate[] = [];
after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
});

async function gate(flags: string[] = []): Promise<HttpGate & { home: string }> {
  const home = makeHome();
  const g = await startHttpGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags, upstream: [process.execPath, EVERYTHING, 'stdio'] });
  gates.push(g);
  return Object.assign(g, { home });
}

const entries = (home: string): Promise<any[]> => ledgerOfAsync(home); // not spawnSync: this file holds kept-alive connections

/** The gate's upstream processes (its children, but for each one's orphan watchdog: ADR 046). */
const upstreams = (g: HttpGate): number[] =>
  execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(g.child.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim() && !line.includes('cloakpipe-orphan-watch'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));

test('the upstream killed mid-call: -32003 outcome unknown over HTTP, a result entry says so, the next session gets a new upstream', async () => {
  const g = await gate();
  const c = await httpClient(g.url);
  let killed = false;
  const running = c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 10, steps: 10 } }, undefined, {
    onprogress: () => {
      if (killed) return;
      killed = true;
      const pids = upstreams(g);
      assert.equal(pids.length, 1);
      process.kill(pids[0], 'SIGKILL');
    },
  });
  await assert.rejects(running, (e: unknown) => e instanceof McpError && e.code === -32003 && /outcome unknown \(upstream_exit\)/.test(e.message));
  await c.close().catch(() => undefined);
  const result = (await entries(g.home)).find((e) => e.kind === 'result');
  assert.equal(result.outcome, 'unknown');
  assert.equal(result.why, 'upstream_exit');
  const again = await httpClient(g.url);
  assert.deepEqual((await again.callTool({ name: 'echo', arguments: { message: 'after' } })).content, [{ type: 'text', text: 'Echo: after' }]);
  await again.close();
});

test('the host hangs up on a call: it still settles in the ledger, and its session goes on', async () => {
  const g = await gate();
  const sid = await rawSession(g.url);
  let stream = '';
  const get = request(g.url, { method: 'GET', headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sid } }, (res) => res.on('data', (d: Buffer) => (stream += d.toString())));
  get.on('error', () => undefined);
  get.end();
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } } });
  const req = request(g.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'Mcp-Session-Id': sid } });
  req.on('error', () => undefined);
  req.end(body);
  // Gone before the answer: the gate has the call once the decision entry is there.
  for (let i = 0; i < 100 && !(await entries(g.home)).some((e) => e.kind === 'decision'); i++) await new Promise((res) => setTimeout(res, 50));
  req.destroy();
  // Once the gate has recorded the call's result, the same session answers the next call.
  for (let i = 0; i < 100 && !(await entries(g.home)).some((e) => e.kind === 'result'); i++) await new Promise((res) => setTimeout(res, 100));
  assert.equal((await entries(g.home)).find((e) => e.kind === 'result')?.outcome, 'ok');
  const next = await post(g.url, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'echo', arguments: { message: 'still' } } }, { 'Mcp-Session-Id': sid, Accept: 'application/json' });
  assert.equal(next.status, 200);
  assert.equal((await next.json()).result.content[0].text, 'Echo: still');
  // The answer nobody waits for any more was not put on the session's GET stream.
  assert.ok(!/"id":7[,}]/.test(stream), stream);
  get.destroy();
});

test('SIGTERM mid-call: the call finishes and is answered, then the shutdown entry, exit 0', async () => {
  const g = await gate();
  const c = await httpClient(g.url);
  let signalled = false;
  let upstream = 0;
  const running = c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, undefined, {
    onprogress: () => {
      if (signalled) return;
      signalled = true;
      upstream = upstreams(g)[0];
      g.child.kill('SIGTERM');
    },
  });
  const done = await running;
  assert.ok(signalled);
  assert.match(JSON.stringify(done.content), /Long running operation completed/);
  assert.equal(await g.exited, 0, g.stderr());
  const all = (await entries(g.home));
  assert.equal(all.find((e) => e.kind === 'result')?.outcome, 'ok');
  assert.equal(all.at(-1).kind, 'shutdown');
  // The upstream was stopped with the gate.
  assert.ok(upstream > 0);
  assert.throws(() => process.kill(upstream, 0), /ESRCH/);
});

test('SIGTERM while a call outlasts the 10 s grace: its upstream is stopped, the call ends unknown, the host is told, and it is recorded before the shutdown entry, exit 0', async () => {
  const g = await gate();
  const c = await httpClient(g.url);
  let upstream = 0;
  const running = c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 10 } }, undefined, {
    timeout: 120_000,
    onprogress: () => {
      if (upstream) return;
      upstream = upstreams(g)[0];
      g.child.kill('SIGTERM');
    },
  });
  const heard = running.then(() => 'answered', (e: Error) => e.message);
  assert.equal(await g.exited, 0, g.stderr());
  assert.match(await heard, /-32003: cloakpipe: outcome unknown \(upstream_exit\)/, 'the host is told, on its open POST');
  await c.close();
  const all = (await entries(g.home));
  const result = all.find((e) => e.kind === 'result');
  assert.deepEqual([result?.outcome, result?.why], ['unknown', 'upstream_exit'], 'recorded, not lost');
  assert.equal(all.at(-1).kind, 'shutdown', 'the shutdown entry is the last');
  assert.ok(upstream > 0);
  assert.throws(() => process.kill(upstream, 0), /ESRCH/);
});

test('a session deleted while its call runs still counts against --max-sessions until its upstream is gone', async () => {
  const g = await gate(['--max-sessions', '1']);
  const sid = await rawSession(g.url);
  const call = post(g.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 3, steps: 3 } } }, { 'Mcp-Session-Id': sid, Accept: 'application/json' });
  for (let i = 0; i < 100 && !(await entries(g.home)).some((e) => e.kind === 'decision'); i++) await new Promise((res) => setTimeout(res, 50));
  const deleted = await fetch(g.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
  assert.equal(deleted.status, 200);
  assert.equal(upstreams(g).length, 1, "the deleted session's call still runs, with its upstream");
  const refused = await post(g.url, { jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'second', version: '1' } } });
  assert.equal(refused.status, 503);
  await (await call).text();
  const alive = () => {
    try {
      return upstreams(g).length;
    } catch {
      return 0; // ps lists nothing: no child left
    }
  };
  for (let i = 0; i < 100 && alive() > 0; i++) await new Promise((res) => setTimeout(res, 50));
  assert.equal((await entries(g.home)).find((e) => e.kind === 'result')?.outcome, 'ok');
  await rawSession(g.url); // its place is free once the upstream is gone
});

test('SIGTERM while an initialize body is still arriving and another call runs: the initialize is 503, no session opens, the gate exits 0', async () => {
  const g = await gate();
  const c = await httpClient(g.url);
  let signalled = false;
  const u = new URL(g.url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'late', version: '1' } } });
  const sock = connect(Number(u.port), u.hostname);
  let answer = '';
  sock.on('data', (d) => (answer += d));
  sock.write(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  const running = c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, undefined, {
    onprogress: () => {
      if (signalled) return;
      signalled = true;
      g.child.kill('SIGTERM');
      // The rest of the body once the drain has begun (the door checked `draining` before reading it).
      setTimeout(() => sock.write(body.slice(10)), 200);
    },
  });
  await running;
  // Before: the late initialize opened a session (200) after drain had listed the sessions; its
  // upstream kept the gate alive past its shutdown entry, its session never closed.
  const code = await Promise.race([g.exited, new Promise<string>((r) => setTimeout(() => r('still running'), 10_000).unref())]);
  if (code === 'still running') g.child.kill('SIGKILL');
  assert.equal(code, 0, g.stderr());
  assert.match(answer, /^HTTP\/1\.1 503 /);
  const all = (await entries(g.home));
  assert.equal(all.filter((e) => e.kind === 'session' && e.action === 'open').length, 1);
  assert.equal(all.filter((e) => e.kind === 'session' && e.action === 'close').length, 1);
  assert.equal(all.at(-1).kind, 'shutdown');
  sock.destroy();
});
