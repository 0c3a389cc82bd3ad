// The gate's life: the upstream's exit ends the gate (and the host's end ends the upstream);
// requests in flight when the upstream dies get an error, not silence; shadow mode forwards
// and records; an error while deciding refuses fail_closed and forwards nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';

const MANIFEST = `version: 1
release: life@1
tools:
  echo: { effect: read, arguments: { text: { type: string, one_of_context: task.allowed } } }
  exit_now: { effect: read, arguments: {} }
  hang: { effect: read, arguments: {} }
`;

function setup(flags: string[] = [], context: object = { task: { id: 'T-1', allowed: ['a', 'b'] } }) {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL, 'c.json': context });
  const record = join(tempDir(), 'record.jsonl');
  const home = makeHome();
  const gate = new RawGate({
    home,
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    context: f['c.json'],
    flags,
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_LINES: record },
  });
  const calls = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').filter((l) => l.includes('tools/call')) : []);
  const ledger = () => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  return { gate, calls, ledger, context: f['c.json'], home };
}

const call = (id: number | string, name: string, args: object = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }) + '\n';

test('the upstream dying answers every request in flight with an error and ends the gate', async () => {
  const { gate, ledger } = setup();
  await gate.initialize();
  gate.send(call(1, 'hang'));
  gate.send('{"jsonrpc":"2.0","id":2,"method":"never/answered"}\n');
  await new Promise((r) => setTimeout(r, 300));
  gate.send(call(3, 'exit_now'));
  const answers = new Map<unknown, any>();
  for (let i = 0; i < 3; i++) {
    const r = await gate.next();
    answers.set(r.id, r);
  }
  assert.equal(answers.get(1).error.data.reason, 'outcome_unknown', 'the hanging tools/call');
  assert.match(answers.get(1).error.message, /outcome unknown \(upstream_exit\)/);
  assert.equal(answers.get(3).error.data.reason, 'outcome_unknown', 'the call that killed it');
  assert.equal(answers.get(2).error.code, -32603, 'a plain request in flight');
  const code = await gate.exited;
  assert.equal(code, 1, 'the upstream exited non-zero');
  const kinds = ledger().map((e) => e.kind);
  assert.equal(kinds[0], 'startup');
  assert.equal(kinds.at(-1), 'shutdown');
});

test("the host's end closes the upstream and the gate exits 0 with a shutdown entry", async () => {
  const { gate, ledger } = setup();
  await gate.initialize();
  gate.send(call(1, 'echo', { text: 'a' }));
  assert.ok((await gate.next()).result);
  assert.equal(await gate.end(), 0);
  const entries = ledger();
  assert.deepEqual(entries.map((e) => e.kind), ['startup', 'decision', 'result', 'shutdown']);
  assert.equal(entries[3].reason, 'ended');
  assert.match(gate.stderr, /upstream: started/, "the upstream's stderr is passed to the gate's stderr");
});

test('shadow mode forwards a call enforce would refuse and records would_refuse with the reason', async () => {
  const { gate, calls, ledger } = setup(['--mode', 'shadow']);
  await gate.initialize();
  gate.send(call(1, 'echo', { text: 'not-in-scope' }));
  const r = await gate.next();
  assert.ok(r.result, 'forwarded in shadow mode');
  assert.equal(calls().length, 1);
  gate.send(call(2, 'undeclared'));
  assert.ok(await gate.next());
  await gate.end();
  const decisions = ledger().filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((d) => [d.outcome, d.reason]), [['would_refuse', 'scope_mismatch'], ['would_refuse', 'undeclared_tool']]);
});

test('a task context that breaks mid-session makes the next call fail_closed, and nothing is forwarded', async () => {
  const { gate, calls, context } = setup();
  await gate.initialize();
  gate.send(call(1, 'echo', { text: 'a' }));
  assert.ok((await gate.next()).result);
  writeFileSync(context, '{"task": {"id": "T-1", "allowed": ["a"]'); // truncated by a crashing writer
  gate.send(call(2, 'echo', { text: 'a' }));
  const r = await gate.next();
  assert.equal(r.error.data.reason, 'fail_closed');
  assert.equal(calls().length, 1);
  // The context is re-read when it changes: a fixed file serves again, with the new scope.
  writeFileSync(context, JSON.stringify({ task: { id: 'T-1', allowed: ['b'] } }));
  gate.send(call(3, 'echo', { text: 'a' }));
  assert.equal((await gate.next()).error.data.reason, 'scope_mismatch');
  gate.send(call(4, 'echo', { text: 'b' }));
  assert.ok((await gate.next()).result);
  await gate.end();
});

test('a ledger that cannot be written refuses the call fail_closed and forwards nothing', async () => {
  const { gate, calls, home } = setup();
  await gate.initialize();
  // Another process holds the ledger's write lock past the busy timeout's reach: simulate a
  // store failure by making the ledger read-only for the gate's connection.
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(join(home, 'ledger.db'));
  db.exec('CREATE TRIGGER no_more BEFORE INSERT ON entries BEGIN SELECT RAISE(ABORT, \'disk says no\'); END');
  db.close();
  gate.send(call(1, 'echo', { text: 'a' }));
  const r = await gate.next();
  assert.equal(r.error.data.reason, 'fail_closed');
  assert.equal(r.error.data.entry, null, 'no entry could be written');
  assert.equal(calls().length, 0);
  await gate.end();
});
