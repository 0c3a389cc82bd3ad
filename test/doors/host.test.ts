// The host's side of the relay through the real binary (issue 12 items 1, 9, 11, 13, 18):
// a tools/call notification is refused and recorded, never forwarded; refusals name the id
// whenever it can be read (also at the end of a 5 MB line) and say why in the message;
// blank lines are skipped, never refused; task-augmented calls are gated like any other;
// tools/list offers only declared tools unless --list-undeclared.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startGate } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: doors-host@1
tools:
  echo: { effect: read, arguments: { text: { type: string } } }
  write_file: { effect: write, arguments: { path: { type: string }, content: { type: string } } }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

function start(flags: string[] = []) {
  const home = makeHome();
  const record = join(tempDir(), 'record.jsonl');
  const opts = { home, manifest: files['m.yaml'], policy: files['p.cedar'], flags, upstream: [process.execPath, helperScript('upstream.js')], env: { RECORD_LINES: record } };
  const received = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []);
  const ledger = () => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  return { opts, received, ledger };
}

const ping = (id: string) => `{"jsonrpc":"2.0","id":"${id}","method":"ping"}\n`;

test('a tools/call sent as a notification is refused and recorded, never forwarded, and not answered', async () => {
  const { opts, received, ledger } = start();
  const gate = new RawGate(opts);
  await gate.initialize();
  gate.send('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write_file","arguments":{"path":"/","content":"x"}}}\n');
  gate.send(ping('after'));
  assert.equal((await gate.next()).id, 'after', 'no answer for a message without an id');
  await gate.end();
  assert.equal(received().filter((m) => m.method === 'tools/call').length, 0, 'never forwarded');
  const refusals = ledger().filter((e) => e.kind === 'decision');
  assert.deepEqual(refusals.map((e) => [e.outcome, e.reason]), [['refuse', 'invalid_request']]);
  assert.match(refusals[0].line_digest, /^sha256:/);
});

test('blank lines are skipped like empty ones: no answer, no entry, nothing forwarded', async () => {
  const { opts, received, ledger } = start();
  const gate = new RawGate(opts);
  await gate.initialize();
  const before = received().length;
  gate.send('\n   \n\t\r\n \t \n\r\n');
  gate.send(ping('after'));
  assert.equal((await gate.next()).id, 'after');
  await gate.end();
  assert.equal(received().length, before + 1, 'only the ping reached the server');
  assert.equal(ledger().filter((e) => e.kind === 'decision').length, 0);
});

test('a 5 MB write_file with its id at the end of the line is refused frame_too_large with that id; the message says why', async () => {
  const { opts, received } = start();
  const c = await startGate(opts);
  // The SDK writes `id` after `params`: the id is the last thing on a 5 MB line.
  const big = 'A'.repeat(5 * 1024 * 1024);
  const err = await c.client.callTool({ name: 'write_file', arguments: { path: 'a.txt', content: big } }, undefined, { timeout: 30_000 }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof McpError, `an error answer, not ${String(err)}`);
  assert.equal(err.code, -32700, 'the refusal itself, not the SDK giving up waiting (-32001)');
  assert.match(err.message, /cloakpipe refused: frame_too_large: line longer than 4194304 bytes/);
  // The session goes on.
  const r = await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  assert.ok(!r.isError);
  await c.close();
  assert.equal(received().filter((m) => m.method === 'tools/call').length, 1);
});

test('a task-augmented call is gated like any other: decided, recorded, forwarded with its task', async () => {
  const { opts, received, ledger } = start();
  const gate = new RawGate(opts);
  await gate.initialize();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' }, task: { ttl: 60000 } } }) + '\n');
  const r = await gate.next();
  assert.ok(r.result, JSON.stringify(r));
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'nope', arguments: {}, task: { ttl: 60000 } } }) + '\n');
  assert.equal((await gate.next()).error.data.reason, 'undeclared_tool', 'the task does not bypass the checks');
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' }, task: 'soon' } }) + '\n');
  assert.equal((await gate.next()).error.data.reason, 'invalid_request', 'a task is an object');
  await gate.end();
  const calls = received().filter((m) => m.method === 'tools/call');
  assert.deepEqual(calls.map((m) => m.params), [{ name: 'echo', arguments: { text: 'a' }, task: { ttl: 60000 } }]);
  assert.deepEqual(ledger().filter((e) => e.kind === 'decision').map((e) => e.outcome), ['allow', 'refuse', 'refuse']);
});

test('tools/list offers only the tools the manifest declares; --list-undeclared restores the full list', async () => {
  const names = async (flags: string[]) => {
    const { opts } = start(flags);
    const c = await startGate(opts);
    const list = await c.client.listTools();
    await c.close();
    return list.tools.map((t) => t.name).sort();
  };
  // The server offers echo, exit_now, hang and slow; the manifest declares echo (and write_file).
  assert.deepEqual(await names([]), ['echo']);
  assert.deepEqual(await names(['--list-undeclared']), ['echo', 'exit_now', 'hang', 'slow']);
});
