// A request the gate stops waiting for is cancelled at the server (ADR 056), as MCP asks of a
// sender that times a request out and as the official SDK client does straight to a server:
// a tap between the gate and the server shows the notifications/cancelled it is sent, and that
// the real server then never answers the id the host was told is unknown. A call the host
// cancelled itself is not cancelled twice; one sent with a task is cancelled with tasks/cancel
// once the server, too late, names its task.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles, cloakpipe } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startEverythingHttp } from '../helpers/everything-http.js';
import { startCuttingProxy } from '../helpers/cutting-proxy.js';

const GAVE_UP = 'cloakpipe: no answer within --call-timeout';
const MANIFEST = `version: 1
release: timeout-cancel@1
tools:
  trigger-long-running-operation:
    effect: read
    arguments: { duration: { type: number }, steps: { type: integer } }
  hang: { effect: read, arguments: {} }
  failed_silent: { effect: write, arguments: {} }
  late_task: { effect: write, arguments: {} }
  echo: { effect: read, arguments: {} }
`;
const SLOW = { duration: 2, steps: 2 }; // progress at 1 s and 2 s, then the result

interface Tapped {
  to: 'server' | 'client';
  msg: any;
}

function tap() {
  const file = join(tempDir(), 'tap.jsonl');
  const lines = (): Tapped[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => ({ to: JSON.parse(l).to, msg: JSON.parse(JSON.parse(l).line) })) : []);
  const wrap = (server: string[]) => [process.execPath, helperScript('stdio-tap.js'), ...server];
  return { file, lines, wrap };
}

/** Waits for what the tap shows; a test whose awaited line never comes fails, not hangs. */
async function until(what: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!what()) {
    if (Date.now() > deadline) throw new Error('never happened');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** What the server was sent and answered about one request id after the request itself. */
function afterwards(lines: Tapped[], id: unknown) {
  return {
    cancels: lines.filter((l) => l.to === 'server' && l.msg.method === 'notifications/cancelled' && l.msg.params.requestId === id).map((l) => l.msg.params),
    answered: lines.some((l) => l.to === 'client' && l.msg.id === id && l.msg.method === undefined),
  };
}

/** The last progress step went out: the tool has returned, and its answer would follow at once. */
const finished = (lines: Tapped[]) => lines.some((l) => l.to === 'client' && l.msg.method === 'notifications/progress' && l.msg.params.progress === SLOW.steps);

test('a call the gate times out is cancelled at server-everything, which then never answers it, as straight to the server with the SDK client', async () => {
  // Straight: the SDK client's own timeout.
  const straight = tap();
  const direct = new Client({ name: 'direct', version: '1' });
  await direct.connect(new StdioClientTransport({ command: process.execPath, args: straight.wrap([EVERYTHING]).slice(1), env: { ...(process.env as Record<string, string>), TAP_FILE: straight.file }, stderr: 'ignore' }));
  const timedOut = await direct.callTool({ name: 'trigger-long-running-operation', arguments: SLOW }, undefined, { timeout: 1000, onprogress: () => undefined }).then(() => 'answered', (e: Error) => e.message);
  assert.match(timedOut, /timed out/);
  const directId = straight.lines().find((l) => l.msg.method === 'tools/call')?.msg.id;
  await until(() => finished(straight.lines()));
  await direct.request({ method: 'ping' }, EmptyResultSchema);
  await direct.close();

  // Through the gate, whose --call-timeout is the shorter: the host hears "unknown".
  const through = tap();
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '1s'], upstream: through.wrap([EVERYTHING]), env: { TAP_FILE: through.file } });
  await gate.initialize();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: SLOW, _meta: { progressToken: 'p5' } } }) + '\n');
  let answer;
  do answer = await gate.next();
  while (answer.id !== 5);
  assert.equal(answer.error.code, -32003);
  await until(() => finished(through.lines()));
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'ping' }) + '\n');
  do answer = await gate.next();
  while (answer.id !== 'after');
  assert.equal(await gate.end(), 0);

  const mine = afterwards(through.lines(), 5);
  assert.deepEqual(mine.cancels, [{ requestId: 5, reason: GAVE_UP }], 'the gate cancelled the call it gave up on');
  assert.equal(mine.answered, false, 'so the server never answered it');
  const theirs = afterwards(straight.lines(), directId);
  assert.deepEqual([theirs.cancels.length, theirs.answered], [1, false], 'as with the SDK client straight to the server');
  assert.doesNotMatch(gate.stderr, /late_reply/);
  const results = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => [e.outcome, e.why]), [['unknown', 'timeout']]);
});

function misbehaving(flags: string[] = []) {
  const t = tap();
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '1s', ...flags], upstream: t.wrap([process.execPath, helperScript('misbehaving-upstream.js')]), env: { TAP_FILE: t.file } });
  return { gate, lines: t.lines };
}

const send = (gate: RawGate, msg: object) => gate.send(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
async function answerTo(gate: RawGate, id: unknown): Promise<any> {
  for (;;) {
    const m = await gate.next(20_000);
    if (m.id === id) return m;
  }
}

test('a request that is not a call, never answered, is cancelled at the server when the gate gives up on it; one the host cancelled is cancelled once, by the host', async () => {
  const { gate, lines } = misbehaving();
  await gate.initialize();
  send(gate, { id: 1, method: 'resources/read', params: { uri: 'hang:' } });
  assert.equal((await answerTo(gate, 1)).error.message, 'cloakpipe: the upstream server did not answer within --call-timeout');
  send(gate, { id: 2, method: 'tools/call', params: { name: 'hang', arguments: {} } });
  await until(() => lines().some((l) => l.msg.id === 2));
  send(gate, { method: 'notifications/cancelled', params: { requestId: 2, reason: 'the host gave up' } });
  send(gate, { id: 3, method: 'tools/call', params: { name: 'hang', arguments: {} } });
  assert.equal((await answerTo(gate, 3)).error.code, -32003);
  send(gate, { id: 'after', method: 'ping' });
  await answerTo(gate, 'after');
  assert.equal(await gate.end(), 0);
  assert.deepEqual(afterwards(lines(), 1).cancels, [{ requestId: 1, reason: GAVE_UP }]);
  assert.deepEqual(afterwards(lines(), 2).cancels, [{ requestId: 2, reason: 'the host gave up' }], 'not a second time by the gate');
  assert.deepEqual(afterwards(lines(), 3).cancels, [{ requestId: 3, reason: GAVE_UP }]);
});

test("a call sent with a task is not cancelled with notifications/cancelled (MCP: only tasks/cancel may); the gate's own fetch of its result, given up on, is", async () => {
  const { gate, lines } = misbehaving(['--max-in-flight', '1']);
  await gate.initialize();
  send(gate, { id: 1, method: 'tools/call', params: { name: 'failed_silent', arguments: {}, task: { ttl: 60000 } } });
  assert.equal((await answerTo(gate, 1)).result.task.taskId, 'silent-1');
  while ((await gate.next()).params?.status !== 'failed'); // the gate fetches the result now
  send(gate, { id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } }); // read once the call timed out
  assert.equal((await answerTo(gate, 2)).result.content[0].text, 'ok');
  assert.equal(await gate.end(), 0);
  const fetch = lines().find((l) => l.to === 'server' && l.msg.method === 'tasks/result');
  assert.match(fetch?.msg.id, /^cloakpipe-result-/, "the gate's own fetch");
  const cancels = lines().filter((l) => l.to === 'server' && l.msg.method === 'notifications/cancelled').map((l) => l.msg.params);
  assert.deepEqual(cancels, [{ requestId: fetch!.msg.id, reason: GAVE_UP }]);
});

test('over Streamable HTTP: the call the gate times out is cancelled at server-everything, and the event stream that carried it is closed, not left open for good', async () => {
  const server = await startEverythingHttp();
  const proxy = await startCuttingProxy(server.url, () => false);
  try {
    const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
    const gate = new RawGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '1s', '--upstream-url', proxy.url], upstream: [] });
    await gate.initialize();
    send(gate, { id: 5, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: SLOW } });
    assert.equal((await answerTo(gate, 5)).error.code, -32003);
    const posted = proxy.seen.flatMap((r) => (r.body ? [JSON.parse(r.body)] : []));
    assert.deepEqual(posted.filter((m) => m.method === 'notifications/cancelled').map((m) => m.params), [{ requestId: 5, reason: GAVE_UP }]);
    // The server never answers a cancelled request; its stream ends because the gate closes it.
    const deadline = Date.now() + 10_000;
    while (proxy.open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(proxy.open, 0, 'no event stream left open for the call given up on');
    assert.equal(await gate.end(), 0);
  } finally {
    await proxy.close();
    await server.stop();
  }
});

test('a call sent with a task whose task the server names only after the gate gave up: nobody else knows that task, so the gate cancels it with tasks/cancel; the host sees none of it', async () => {
  const { gate, lines } = misbehaving();
  await gate.initialize();
  send(gate, { id: 1, method: 'tools/call', params: { name: 'late_task', arguments: {}, task: { ttl: 60000 } } });
  assert.equal((await answerTo(gate, 1)).error.code, -32003);
  await until(() => lines().some((l) => l.to === 'client' && l.msg.result?.status === 'cancelled'));
  send(gate, { id: 'after', method: 'ping' });
  const seen = [];
  for (let m = await gate.next(); m.id !== 'after'; m = await gate.next()) seen.push(m);
  assert.deepEqual(seen, [], 'neither the late task nor its cancellation reaches the host');
  assert.equal(await gate.end(), 0);
  const toServer = lines().filter((l) => l.to === 'server').map((l) => l.msg);
  assert.deepEqual(toServer.filter((m) => m.method === 'notifications/cancelled'), [], 'a task-augmented request is not cancelled with notifications/cancelled');
  const cancel = toServer.find((m) => m.method === 'tasks/cancel');
  assert.deepEqual(cancel?.params, { taskId: 'made-late-1' });
  assert.match(cancel?.id, /^cloakpipe-cancel-/);
});
