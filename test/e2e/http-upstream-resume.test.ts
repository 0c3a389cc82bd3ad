// Streamable HTTP resumability toward the upstream: a POST's event stream that the server cuts
// before the reply is resumed with GET and Last-Event-ID when the server gave event ids; the
// resumed stream is read as strictly and only this call's reply is taken from it (a replayed
// reply to another id never answers a call still waiting). Without ids, when the server refuses
// to resume, sends nothing new or breaks the format, the call ends as before: -32003 outcome
// unknown, recorded, nothing replayed. Against the official SDK's server transport with an event
// store (closeSSEStream: the server ends the stream itself and expects the client back) and a raw
// server that cuts on purpose.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cloakpipe, makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { call, startGate, waitFor, type RunningGate } from '../helpers/gate.js';
import { CANARY, TOOLS, startRawUpstream, type RawUpstream } from '../helpers/misbehaving-http-upstream.js';
import { startRecordingServer } from '../helpers/recording-http-server.js';
import { startCuttingProxy } from '../helpers/cutting-proxy.js';
import { startEverythingHttp } from '../helpers/everything-http.js';

const RAW_MANIFEST = `version: 1\nrelease: raw-http@1\ntools:\n${TOOLS.map((t) => `  ${t}: { effect: write, arguments: {} }\n`).join('')}`;
const SDK_MANIFEST = 'version: 1\nrelease: recording-http@1\ntools:\n  slow_write: { effect: write, arguments: { note: { type: string } } }\n  echo: { effect: read, arguments: { message: { type: string } } }\n';

function results(home: string): { outcome: string }[] {
  const shown = cloakpipe(['ledger', 'show', '--home', home, '--json']);
  assert.equal(shown.status, 0, shown.stderr);
  return shown.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.kind === 'result');
}

for (const cuts of [1, 3]) {
  test(`SDK server with an event store: a stream closed ${cuts} time(s) before the reply is resumed; the write is answered once and recorded ok`, async () => {
    const server = await startRecordingServer({ resumable: true, cuts });
    const files = writeFiles({ 'm.yaml': SDK_MANIFEST, 'p.cedar': PERMIT_ALL });
    const home = makeHome();
    const gate = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', server.url, '--call-timeout', '60s'], upstream: [] }).catch(async (e) => {
      await server.close(); // nothing may hold the run open when the gate does not start
      throw e;
    });
    try {
      const r = await call(gate, 'slow_write', { note: 'n1' });
      assert.deepEqual(r.ok && r.text, 'stored n1', JSON.stringify(r));
      assert.equal(server.writes.length, 1, 'the write ran once: resuming never sends the call again');
      const gets = server.seen.filter((q) => q.method === 'GET' && q.headers['last-event-id'] !== undefined);
      assert.ok(gets.length >= cuts, `resumed ${gets.length} times`);
      assert.ok(server.seen.filter((q) => q.method === 'POST').every((q) => q.headers['last-event-id'] === undefined));
      const again = await call(gate, 'echo', { message: 'after' });
      assert.ok(again.ok && again.text === 'Echo: after');
    } finally {
      await gate.close();
      await server.close();
    }
    assert.deepEqual(results(home).map((e) => e.outcome), ['ok', 'ok']);
    assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
  });
}

test('server-everything (streamableHttp, its own event store): the network cuts the stream just before the reply; the gate resumes and gets it', async () => {
  const everything = await startEverythingHttp();
  // Cut the first answer to a get-sum call, at its reply event.
  let first = true;
  const proxy = await startCuttingProxy(everything.url, (body) => {
    const hit = first && body.includes('"get-sum"');
    if (hit) first = false;
    return hit;
  });
  const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: everything@1\ntools:\n  get-sum: { effect: write, arguments: { a: { type: number }, b: { type: number } } }\n', 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const gate = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', proxy.url, '--call-timeout', '60s'], upstream: [] }).catch(async (e) => {
    await proxy.close();
    await everything.stop();
    throw e;
  });
  try {
    const r = await call(gate, 'get-sum', { a: 2, b: 40 });
    assert.ok(r.ok && /42/.test(r.text), `${JSON.stringify(r)}\n${gate.stderr()}\n${JSON.stringify(proxy.seen.map((q) => [q.method, q.headers["last-event-id"]]))}`);
    assert.equal(proxy.cuts, 1, 'the stream was cut before the reply');
    assert.ok(proxy.seen.some((q) => q.method === 'GET' && typeof q.headers['last-event-id'] === 'string'), 'resumed with Last-Event-ID');
    const again = await call(gate, 'get-sum', { a: 1, b: 1 });
    assert.ok(again.ok && /2/.test(again.text));
  } finally {
    await gate.close();
    await proxy.close();
    await everything.stop();
  }
  assert.deepEqual(results(home).map((e) => e.outcome), ['ok', 'ok']);
});

test('a resumed stream the server holds open without the reply is closed when the call times out: none outlives its call', async () => {
  const upstream = await startRawUpstream();
  const files = writeFiles({ 'm.yaml': RAW_MANIFEST, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', upstream.url, '--call-timeout', '2s'], upstream: [] }).catch(async (e) => {
    await upstream.close();
    throw e;
  });
  try {
    const r = await call(g, 'resume_idle', {}, undefined, 30_000);
    assert.ok(!r.ok && r.code === -32003, JSON.stringify(r));
    assert.equal(resumesOfIn(upstream, 'resume_idle').length, 1);
    await waitFor(() => upstream.idle.closed > 0, 10_000, 'the resumed stream to close once its call ended');
    // The session goes on.
    const ok = await call(g, 'ok', {});
    assert.ok(ok.ok, JSON.stringify(ok));
  } finally {
    await g.close();
    await upstream.close();
  }
});

test('a stream being resumed is closed as soon as the host cancels its call, not at --call-timeout; the call stays unknown', async () => {
  const upstream = await startRawUpstream();
  const files = writeFiles({ 'm.yaml': RAW_MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const g = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', upstream.url, '--call-timeout', '60s'], upstream: [] }).catch(async (e) => {
    await upstream.close();
    throw e;
  });
  try {
    const abort = new AbortController();
    const pending = g.client.callTool({ name: 'resume_idle', arguments: {} }, undefined, { signal: abort.signal, timeout: 60_000 }).then(
      () => 'answered',
      () => 'rejected',
    );
    await waitFor(() => resumesOfIn(upstream, 'resume_idle').length > 0, 5_000, 'the gate to resume the stream');
    const cancelledAt = Date.now();
    abort.abort('the host gave up');
    assert.equal(await pending, 'rejected');
    await waitFor(() => upstream.idle.closed > 0, 5_000, 'the resumed stream to close once its call was cancelled');
    assert.ok(Date.now() - cancelledAt < 30_000, 'closed on the cancellation, not at the 60 s call timeout');
    await waitFor(() => results(home).some((e) => e.outcome === 'unknown'), 10_000, 'an unknown result recorded for the cancelled call');
    // The session goes on.
    const ok = await call(g, 'ok', {});
    assert.ok(ok.ok, JSON.stringify(ok));
  } finally {
    await g.close();
    await upstream.close();
  }
});

const resumesOfIn = (u: RawUpstream, tool: string) => u.seen.filter((q) => q.method === 'GET' && String(q.headers['last-event-id'] ?? '').startsWith(`${tool}-`));

let raw: RawUpstream;
let gate: RunningGate;
let home: string;

before(async () => {
  raw = await startRawUpstream();
  const files = writeFiles({ 'm.yaml': RAW_MANIFEST, 'p.cedar': PERMIT_ALL });
  home = makeHome();
  gate = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--upstream-url', raw.url, '--call-timeout', '60s'], upstream: [] });
});

after(async () => {
  await gate?.close();
  await raw?.close();
});

const resumesOf = (tool: string) => resumesOfIn(raw, tool);

test('raw server: a cut stream with ids resumes from the last dispatched id; a replayed reply to a call still waiting is dropped, not taken as its answer', async () => {
  const waiting = call(gate, 'held', {});
  await raw.heldCount(1);
  const r = await call(gate, 'resume_ok', {});
  assert.ok(r.ok && r.text === `resume_ok ${CANARY}`, JSON.stringify(r));
  const gets = resumesOf('resume_ok');
  assert.equal(gets.length, 1);
  // -1 is the last event the gate read whole; -2 was cut mid-event, so it does not count.
  assert.match(String(gets[0].headers['last-event-id']), /^resume_ok-.*-1$/);
  raw.held.shift()!();
  const held = await waiting;
  assert.ok(held.ok && held.text === `held ${CANARY}`, `the stale replayed reply answered the waiting call: ${JSON.stringify(held)}`);
  assert.match(gate.stderr(), /upstream_message_dropped.*sse_resumed_other_reply/);
});

for (const [tool, most] of [['resume_refused', 1], ['resume_loop', 3], ['resume_bad', 1], ['sse_cut', 0]] as const) {
  test(`raw server: ${tool} ends the call -32003 outcome unknown after at most ${most} resumption(s), nothing replayed`, async () => {
    const r = await call(gate, tool, {});
    assert.ok(!r.ok && r.code === -32003 && r.reason === 'outcome_unknown', JSON.stringify(r));
    const n = tool === 'sse_cut' ? raw.seen.filter((q) => q.method === 'GET' && q.headers['last-event-id'] !== undefined && !/^resume_/.test(String(q.headers['last-event-id']))).length : resumesOf(tool).length;
    assert.ok(n <= most && (tool === 'sse_cut' || n >= 1), `${n} resumptions`);
  });
}

test('raw server: every call recorded (ok or unknown), the ledger verifies and holds no payload', () => {
  const outcomes = results(home).map((e) => e.outcome);
  assert.deepEqual(outcomes.sort(), ['ok', 'ok', 'unknown', 'unknown', 'unknown', 'unknown'].sort());
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
  assert.ok(!cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.includes(CANARY));
});
