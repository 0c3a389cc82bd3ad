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
import { digestBytes, digestJson } from '../../src/core/digest.js';

const CANARY = 'CANARY-upstream-9c1e';
const TOOLS = ['dup_result', 'dup_id', 'result_and_error', 'bom', 'batch', 'trailing', 'twice', 'spaced', 'arm', 'echo', 'hang', 'same_task', 'lasting_task', 'lasting_count', 'fetched_count'];
const MANIFEST = `version: 1\nrelease: strict-upstream@1\ntools:\n${TOOLS.map((t) => `  ${t}: { effect: read, arguments: {} }`).join('\n')}
  cancelled_task: { effect: read, arguments: { how: { type: string, max_len: 10, required: true } } }
  saved: { effect: write, arguments: {} }
  failed_task: { effect: write, arguments: {} }
  failed_silent: { effect: write, arguments: {} }\n`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

function start(flags: string[] = [], env: Record<string, string> = {}) {
  const home = makeHome();
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '1s', ...flags], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env });
  const ledger = () => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  return { gate, ledger, home };
}
const call = (id: number, name: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }) + '\n';
const rpc = (id: number, method: string, params: object) => JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n';
/** A read the misbehaving server never answers. */
const hang = (id: number) => rpc(id, 'resources/read', { uri: 'hang:' });

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

test('calls sent with a task have a bound apart from requests in flight: past --max-in-flight a new one is refused too_many_tasks and recorded, never forwarded; the host is still read, and a fetched result frees a place', async () => {
  const { gate, ledger, home } = start(['--call-timeout', '20s', '--max-in-flight', '2']);
  await gate.initialize();
  const lasting = (id: number) => rpc(id, 'tools/call', { name: 'lasting_task', arguments: {}, task: { ttl: 60000 } });
  gate.send(lasting(1));
  assert.equal((await gate.next()).result.task.taskId, 'lasting-1');
  gate.send(lasting(2));
  assert.equal((await gate.next()).result.task.taskId, 'lasting-2');
  gate.send(lasting(3));
  const refused = await gate.next();
  assert.equal(refused.id, 3);
  assert.equal(refused.error.code, -32001);
  assert.equal(refused.error.data.reason, 'too_many_tasks');
  assert.match(refused.error.message, /^cloakpipe refused: too_many_tasks: 2 calls sent with a task are open/);
  // Two tasks wait, yet the host is read: requests pass, and the server never heard of call 3.
  gate.send(call(4, 'lasting_count'));
  assert.equal((await gate.next()).result.content[0].text, '2');
  gate.send(rpc(5, 'tasks/result', { taskId: 'lasting-1' }));
  const fetched = await gate.next();
  assert.deepEqual([fetched.id, fetched.result.content[0].text], [5, 'lasting']);
  gate.send(lasting(6));
  assert.equal((await gate.next()).result.task.taskId, 'lasting-6', 'the settled call freed its place');
  assert.equal(await gate.end(), 0);
  const entries = ledger();
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((e) => [e.tool ?? null, e.outcome, e.reason ?? null]), [
    ['lasting_task', 'allow', null],
    ['lasting_task', 'allow', null],
    [null, 'refuse', 'too_many_tasks'],
    ['lasting_count', 'allow', null],
    ['lasting_task', 'allow', null],
  ]);
  assert.equal(decisions[2].seq, refused.error.data.entry);
  assert.equal(decisions[2].line_digest, digestBytes(Buffer.from(lasting(3).slice(0, -1))), 'the refused line, by digest');
  const resultOf = (seq: number) => entries.filter((e) => e.kind === 'result' && e.decision === seq).map((e) => e.outcome);
  assert.deepEqual(resultOf(decisions[0].seq), ['ok'], 'settled by its fetched result');
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});

test('stored results replayed as tasks: a session keeps the --max-in-flight most recent; an older one is forgotten, never kept without end, and the same call replays it again', async () => {
  const { gate } = start(['--max-in-flight', '2']);
  await gate.initialize();
  const saved = (id: number, task: boolean) => rpc(id, 'tools/call', { name: 'saved', arguments: {}, _meta: { 'cloakpipe/operation_id': 'save-1' }, ...(task ? { task: {} } : {}) });
  gate.send(saved(1, false));
  assert.equal((await gate.next()).result.content[0].text, 'ok');
  const replayed: string[] = [];
  for (const id of [2, 3, 4]) {
    gate.send(saved(id, true));
    const r = await gate.next();
    assert.equal(r.result.task.status, 'completed');
    replayed.push(r.result.task.taskId);
  }
  // The oldest was forgotten: the gate no longer answers for it (the server does, as for any id it never made).
  gate.send(rpc(5, 'tasks/result', { taskId: replayed[0] }));
  assert.deepEqual((await gate.next()).result, {}, "the server's answer, not the stored result");
  for (const [i, taskId] of replayed.slice(1).entries()) {
    gate.send(rpc(6 + i, 'tasks/result', { taskId }));
    assert.equal((await gate.next()).result.content[0].text, 'ok', 'the two most recent are answered with the stored result');
  }
  gate.send(saved(8, true));
  const again = await gate.next();
  gate.send(rpc(9, 'tasks/result', { taskId: again.result.task.taskId }));
  assert.equal((await gate.next()).result.content[0].text, 'ok', 'the same call replays it again');
  assert.equal(await gate.end(), 0);
});

test('a task that fails on its own (its status notification, said twice): the gate fetches its result once, never shown to the host, and the call settles failed with it, not unknown at --call-timeout', async () => {
  const { gate, ledger, home } = start(['--call-timeout', '20s']);
  await gate.initialize();
  gate.send(rpc(1, 'tools/call', { name: 'failed_task', arguments: {}, _meta: { 'cloakpipe/operation_id': 'fail-1' }, task: { ttl: 60000 } }));
  assert.equal((await gate.next()).result.task.taskId, 'failed-1');
  for (let i = 0; i < 2; i++) {
    const status = await gate.next();
    assert.deepEqual([status.method, status.params.status], ['notifications/tasks/status', 'failed'], 'the host gets each notification as it came');
  }
  let results: any[] = [];
  for (let i = 0; i < 200 && results.length === 0; i++) { // inside --call-timeout 20s
    await new Promise((r) => setTimeout(r, 50));
    results = ledger().filter((e) => e.kind === 'result');
  }
  assert.deepEqual(results.map((e) => e.outcome), ['ok'], 'settled by the result the gate fetched, while the session runs');
  const ops = cloakpipe(['ops', 'list', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l).state);
  assert.deepEqual(ops, ['failed'], 'isError: the write failed');
  // Nothing of the gate's own request reaches the host: the next line answers the next request.
  gate.send(call(2, 'fetched_count'));
  const count = JSON.parse(await gate.nextLine());
  assert.deepEqual([count.id, count.result.content[0].text], [2, '1'], 'fetched once');
  // failed, not unknown: the same write may run again.
  gate.send(rpc(3, 'tools/call', { name: 'failed_task', arguments: {}, _meta: { 'cloakpipe/operation_id': 'fail-1' }, task: { ttl: 60000 } }));
  assert.equal((await gate.next()).result.task.taskId, 'failed-3');
  assert.equal(await gate.end(), 0);
  assert.ok(!gate.stderr.includes(CANARY), 'the log carries digests only');
  const retried = ledger().filter((e) => e.kind === 'decision' && e.tool === 'failed_task').map((e) => e.outcome);
  assert.deepEqual(retried, ['allow', 'allow'], 'not reconcile_before_retry');
});

test("a failed task whose result the server never gives: the call ends unknown at --call-timeout, and the gate's own fetch no longer holds a request in flight", async () => {
  const { gate, ledger } = start(['--max-in-flight', '1']);
  await gate.initialize();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'failed_silent', arguments: {}, task: { ttl: 60000 } } }) + '\n');
  assert.equal((await gate.next()).result.task.taskId, 'silent-1');
  assert.equal((await gate.next()).params.status, 'failed');
  // The fetch the gate sent fills --max-in-flight 1 until the call times out; then the host is read again.
  gate.send(call(2, 'echo'));
  const echoed = await gate.next(20_000);
  assert.deepEqual([echoed.id, echoed.result.content[0].text], [2, 'ok']);
  assert.equal(await gate.end(), 0);
  const results = ledger().filter((e) => e.kind === 'result').map((e) => [e.outcome, e.why ?? null]);
  assert.deepEqual(results, [['unknown', 'timeout'], ['ok', null]]);
});

test('a request that is not a call, which the server never answers, ends as on its death at --call-timeout: it cannot hold --max-in-flight places and stop the gate reading the host', async () => {
  const { gate } = start(['--max-in-flight', '2']);
  await gate.initialize();
  gate.send(hang(1) + hang(2));
  gate.send(call(3, 'echo')); // read only once a place is free
  const lines = [await gate.next(20_000), await gate.next(20_000), await gate.next(20_000)];
  const unanswered = lines.filter((m) => m.id !== 3);
  assert.deepEqual(unanswered.map((m) => [m.id, m.error.code, m.error.message]).sort(), [
    [1, -32603, 'cloakpipe: the upstream server did not answer within --call-timeout'],
    [2, -32603, 'cloakpipe: the upstream server did not answer within --call-timeout'],
  ]);
  assert.equal(lines.find((m) => m.id === 3)?.result.content[0].text, 'ok');
  assert.equal(await gate.end(), 0);
  assert.equal(gate.stderr.split('\n').filter((l) => l.includes('request_unanswered')).length, 2, 'each is logged');
});

test('the host cancelling a request that is not a call frees its place at once: nothing more reaches the host for it, and the session goes on', async () => {
  const { gate } = start(['--max-in-flight', '2', '--call-timeout', '60s']);
  await gate.initialize();
  const cancelled = (id: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'timeout' } }) + '\n';
  gate.send(hang(1) + cancelled(1) + hang(2));
  gate.send(call(3, 'echo')); // with request 1 still holding a place, the gate would not read this for 60 s
  const echoed = await gate.next(20_000);
  assert.deepEqual([echoed.id, echoed.result.content[0].text], [3, 'ok']);
  assert.equal(await gate.end(), 0);
});

test('initialize waits for a server slower to start than --call-timeout', async () => {
  const { gate } = start([], { INIT_DELAY_MS: '1500' });
  const init = await gate.initialize();
  assert.equal(init.result.serverInfo.name, 'misbehaving');
  assert.equal(await gate.end(), 0);
});

test('the host ends after the server said its task completed, before fetching the result: the gate fetches it, and the call is recorded with it, never unknown', async () => {
  const { gate, ledger } = start(['--call-timeout', '20s']);
  await gate.initialize();
  gate.send(rpc(1, 'tools/call', { name: 'lasting_task', arguments: {}, task: { ttl: 60000 } }));
  assert.equal((await gate.next()).result.task.taskId, 'lasting-1');
  gate.send(rpc(2, 'tasks/get', { taskId: 'lasting-1' }));
  assert.equal((await gate.next()).result.status, 'completed');
  assert.equal(await gate.end(), 0);
  const results = ledger().filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => [e.outcome, e.why ?? null]), [['ok', null]]);
  assert.equal(results[0].result_digest, digestJson({ content: [{ type: 'text', text: 'lasting' }] }), 'the result the server held');
});
