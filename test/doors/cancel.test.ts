// notifications/cancelled (product.md 7a, issue 12 item 10), through the real binary: passed on
// for a forwarded call, and no late answer for that id afterwards, not even the -32003 at
// --call-timeout; a write cancelled before it reached the tool ran nowhere, so it may be
// retried, while one the upstream had received stays `unknown`.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';

const MANIFEST = `version: 1
release: doors-cancel@1
tools:
  echo: { effect: write, arguments: { text: { type: string } } }
  hang: { effect: write, arguments: {} }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

function start() {
  const home = makeHome();
  const record = join(tempDir(), 'record.jsonl');
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '1s'], upstream: [process.execPath, helperScript('upstream.js')], env: { RECORD_LINES: record } });
  const received = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []);
  const ledger = () => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  const ops = () => cloakpipe(['ops', 'list', '--home', home, '--json']).stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return { gate, received, ledger, ops, home };
}

const call = (id: number, name: string, args: object = {}) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }) + '\n';
const cancel = (id: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user' } }) + '\n';

async function until(what: () => boolean): Promise<void> {
  while (!what()) await new Promise((r) => setTimeout(r, 50));
}

test('a forwarded call the host cancels: the cancellation is passed on, and no answer for its id ever follows', async () => {
  const { gate, received, ledger, ops } = start();
  await gate.initialize();
  gate.send(call(7, 'hang'));
  await until(() => received().some((m) => m.method === 'tools/call'));
  gate.send(cancel(7));
  await until(() => received().some((m) => m.method === 'notifications/cancelled'));
  assert.deepEqual(received().find((m) => m.method === 'notifications/cancelled').params, { requestId: 7, reason: 'user' });
  // The gate gives up at --call-timeout and records it; the host, having cancelled, hears nothing.
  await until(() => ledger().some((e) => e.kind === 'result'));
  gate.send('{"jsonrpc":"2.0","id":"after","method":"ping"}\n');
  assert.equal((await gate.next()).id, 'after', 'no late -32003 for the cancelled id');
  await gate.end();
  assert.equal(ledger().find((e) => e.kind === 'result').outcome, 'unknown');
  assert.deepEqual(ops().map((o: any) => o.state), ['unknown'], 'the upstream had received it: its outcome is unknown');
});

test('a write cancelled while it was being decided never reaches the tool and may be retried', async () => {
  const { gate, received, ledger, ops } = start();
  await gate.initialize();
  // The call and its cancellation arrive in one read: the cancellation is handled while the
  // call's decision is still being made durable, before anything is forwarded.
  gate.send(call(1, 'echo', { text: 'a' }) + cancel(1));
  await until(() => ledger().some((e) => e.kind === 'result'));
  gate.send('{"jsonrpc":"2.0","id":"after","method":"ping"}\n');
  assert.equal((await gate.next()).id, 'after', 'no answer for the cancelled id');
  assert.equal(received().filter((m) => m.method === 'tools/call').length, 0, 'the tool never saw it');
  assert.ok(!received().some((m) => m.method === 'notifications/cancelled'), 'nothing to cancel upstream');
  assert.equal(ledger().find((e) => e.kind === 'result').outcome, 'not_forwarded');
  assert.deepEqual(ops().map((o: any) => o.state), ['failed'], 'not unknown: it ran nowhere');
  gate.send(call(2, 'echo', { text: 'a' }));
  const r = await gate.next();
  assert.equal(r.id, 2);
  assert.ok(r.result, `the retry runs: ${JSON.stringify(r.error?.data?.reason)}`);
  await gate.end();
  assert.equal(received().filter((m) => m.method === 'tools/call').length, 1);
});
