// The upstream's side (product.md 7a, issue 12 item 4), through the real binary and a server
// that misbehaves on purpose: the host only ever sees the RFC 8785 form of a message the strict
// parser read; an unreadable reply, a batch, a reply to an id the gate never forwarded or a
// second reply is dropped and logged by digest; the call ends as on the upstream's death
// (-32003 outcome unknown at --call-timeout).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startGate } from '../helpers/gate.js';
import { canonicalize } from '../../src/core/canonical.js';

const CANARY = 'CANARY-upstream-9c1e';
const TOOLS = ['dup_result', 'dup_id', 'result_and_error', 'bom', 'batch', 'trailing', 'twice', 'spaced', 'arm', 'echo', 'hang', 'same_task'];
const MANIFEST = `version: 1\nrelease: strict-upstream@1\ntools:\n${TOOLS.map((t) => `  ${t}: { effect: read, arguments: {} }`).join('\n')}
  cancelled_task: { effect: read, arguments: { how: { type: string, max_len: 10, required: true } } }\n`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

function start(flags: string[] = []) {
  const home = makeHome();
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '1s', ...flags], upstream: [process.execPath, helperScript('misbehaving-upstream.js')] });
  const ledger = () => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  return { gate, ledger };
}
const call = (id: number, name: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }) + '\n';

test('a reply the strict parser refuses never reaches the host; the call ends outcome unknown at --call-timeout', async () => {
  const { gate, ledger } = start();
  await gate.initialize();
  const bad = ['dup_result', 'dup_id', 'result_and_error', 'bom', 'batch', 'trailing'];
  for (const [i, tool] of bad.entries()) {
    gate.send(call(i + 1, tool));
    const line = await gate.nextLine();
    assert.ok(!line.includes(CANARY), `${tool}: nothing of the upstream's line reaches the host`);
    const r = JSON.parse(line);
    assert.equal(r.id, i + 1, tool);
    assert.equal(r.error.code, -32003, `${tool}: outcome unknown, as on the upstream's death`);
    assert.match(r.error.message, /outcome unknown \(timeout\)/, tool);
  }
  // The session goes on: a well-formed reply still passes.
  gate.send(call(50, 'echo'));
  assert.equal((await gate.next()).result.content[0].text, 'ok');
  assert.equal(await gate.end(), 0);
  const drops = gate.stderr.split('\n').filter((l) => l.includes('upstream_message_dropped'));
  assert.equal(drops.length, bad.length, 'each dropped line is logged');
  for (const d of drops) assert.match(JSON.parse(d).line_digest, /^sha256:[0-9a-f]{64}$/);
  assert.ok(!gate.stderr.includes(CANARY), 'the log carries digests only');
  const results = ledger().filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => e.outcome), [...bad.map(() => 'unknown'), 'ok']);
});

test('a server that gives one task id to two calls: the second ends outcome unknown, its task never reaches the host; the first settles with its result', async () => {
  const { gate, ledger } = start(['--call-timeout', '20s']);
  await gate.initialize();
  const taskCall = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'same_task', arguments: {}, task: { ttl: 60000 } } }) + '\n';
  gate.send(taskCall(1));
  assert.equal((await gate.next()).result.task.taskId, 'task-reused');
  gate.send(taskCall(2));
  const second = await gate.next();
  assert.equal(second.id, 2);
  assert.equal(second.error.code, -32003);
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId: 'task-reused' } }) + '\n');
  const result = await gate.next();
  assert.equal(result.id, 3);
  assert.match(result.result.content[0].text, /^task result /);
  assert.equal(await gate.end(), 0);
  const entries = ledger();
  const decisions = entries.filter((e) => e.kind === 'decision').map((e) => e.seq);
  const outcomeOf = (seq: number) => entries.filter((e) => e.kind === 'result' && e.decision === seq).map((e) => e.outcome);
  assert.deepEqual(decisions.map(outcomeOf), [['ok'], ['unknown']]);
});

test('a task the server reports cancelled ends its call outcome unknown (cancelled) at once, however it says so; a failure after the host asked to cancel is unknown too, a success still settles', async () => {
  const { gate, ledger } = start(['--call-timeout', '20s']);
  await gate.initialize();
  const rpc = (id: number, method: string, params: object) => JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n';
  const reply = async (id: number) => {
    for (;;) {
      const m = await gate.next();
      if (m.id === id) return m;
    }
  };
  const ways: [string, (id: number) => Promise<void>][] = [
    ['status', async () => undefined], // the server's own notification
    ['get', async (id) => void gate.send(rpc(id, 'tasks/get', { taskId: 'task-get' }))],
    ['list', async (id) => void gate.send(rpc(id, 'tasks/list', {}))],
    ['late', async (id) => { // the result's error comes before the cancel's answer
      gate.send(rpc(id, 'tasks/cancel', { taskId: 'task-late' }));
      gate.send(rpc(id + 1, 'tasks/result', { taskId: 'task-late' }));
      assert.equal((await reply(id + 1)).error.code, -32603, 'the host gets the server error as it came');
    }],
    ['finished', async (id) => { // the cancel came too late: the task had ended, its result stands
      gate.send(rpc(id, 'tasks/cancel', { taskId: 'task-finished' }));
      assert.equal((await reply(id)).error.code, -32602);
      gate.send(rpc(id + 1, 'tasks/result', { taskId: 'task-finished' }));
      assert.equal((await reply(id + 1)).result.content[0].text, 'finished');
    }],
  ];
  let id = 1;
  for (const [how, cancel] of ways) {
    gate.send(rpc(id, 'tools/call', { name: 'cancelled_task', arguments: { how }, task: { ttl: 60000 } }));
    assert.equal((await reply(id)).result.task.taskId, `task-${how}`);
    await cancel(id + 1);
    id += 10;
  }
  // Each call's result entry is written before the session's end would make it unknown (error).
  gate.send(call(id, 'echo'));
  await reply(id);
  const before = ledger().filter((e) => e.kind === 'result');
  assert.equal(await gate.end(), 0);
  const entries = ledger();
  const decisions = entries.filter((e) => e.kind === 'decision').map((e) => e.seq);
  const resultOf = (seq: number) => entries.filter((e) => e.kind === 'result' && e.decision === seq).map((e) => [e.outcome, e.why ?? null]);
  const expected = [['unknown', 'cancelled'], ['unknown', 'cancelled'], ['unknown', 'cancelled'], ['unknown', 'cancelled'], ['ok', null], ['ok', null]];
  assert.deepEqual(decisions.map((seq) => resultOf(seq)[0]), expected);
  assert.equal(before.length, expected.length, 'all settled while the session ran');
});

test('the host gets the canonical form of a reply, and a second reply to one id is dropped', async () => {
  const { gate } = start();
  await gate.initialize();
  gate.send(call(1, 'spaced'));
  const line = await gate.nextLine();
  assert.equal(line, canonicalize({ id: 1, jsonrpc: '2.0', result: { content: [{ text: 'AB', type: 'text' }] } }));
  gate.send(call(2, 'twice'));
  assert.equal((await gate.next()).result.content[0].text, 'first');
  gate.send('{"jsonrpc":"2.0","id":3,"method":"ping"}\n');
  assert.deepEqual(await gate.next(), { id: 3, jsonrpc: '2.0', result: {} }, 'the next line is the ping answer, not a second reply');
  await gate.end();
  assert.match(gate.stderr, /"event":"upstream_message_dropped".*"cause":"unsolicited_reply"/);
  assert.ok(!gate.stderr.includes(CANARY));
});

test('the SDK client never sees a made-up answer to a call the gate refused', async () => {
  const home = makeHome();
  const pidFile = join(tempDir(), 'pid');
  const c = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile } });
  await c.client.callTool({ name: 'arm', arguments: {} }); // the server learns the next id
  // The server answers that id, unasked, every millisecond: the gate's refusal of the call
  // (durable first) would come after a forged answer passed straight through.
  process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGUSR1');
  await new Promise((r) => setTimeout(r, 200));
  const refused = c.client.callTool({ name: 'delete_everything', arguments: { path: '/' } }).then(
    (r) => ({ ok: r }),
    (e: Error) => ({ err: e }),
  );
  const outcome = await refused;
  assert.ok('err' in outcome, `the host got a refusal, not ${JSON.stringify(outcome)}`);
  assert.match(outcome.err.message, /cloakpipe refused: undeclared_tool/);
  await c.close();
  assert.match(c.stderr(), /"event":"upstream_message_dropped".*"cause":"unsolicited_reply"/);
  assert.ok(!c.stderr().includes(CANARY));
});
