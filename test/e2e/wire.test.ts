// Raw lines through the real gate: every wire refusal, answered with its code and never
// forwarded; an allowed message arrives at the server re-serialized, never as the raw line.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { recorderManifest } from '../helpers/recorder-manifest.js';
import { canonicalize } from '../../src/core/canonical.js';

const MANIFEST = recorderManifest('wire-test@1');

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'manifest.yaml': MANIFEST, 'policy.cedar': PERMIT_ALL });
});

async function startGate(extraFlags: string[] = []) {
  const record = join(tempDir(), 'record.jsonl');
  const gate = new RawGate({
    home: makeHome(),
    manifest: files['manifest.yaml'],
    policy: files['policy.cedar'],
    flags: extraFlags,
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_LINES: record },
  });
  await gate.initialize();
  const received = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n') : []);
  return { gate, received };
}

const CANARY = 'CANARY-wire-7f3a';

const CASES: { name: string; line: Buffer | string; code: string; rpc: number; id: unknown }[] = [
  { name: 'not JSON', line: `{"jsonrpc":"2.0","id":1,"method":"tools/call",${CANARY}`, code: 'malformed_json', rpc: -32700, id: 1 },
  { name: 'invalid UTF-8', line: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":2,"method":"x","params":{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]), code: 'malformed_json', rpc: -32700, id: 2 },
  { name: 'lone surrogate', line: '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\\ud800"}}}', code: 'malformed_json', rpc: -32700, id: 3 },
  { name: 'trailing data', line: '{"jsonrpc":"2.0","id":4,"method":"ping"} {"jsonrpc":"2.0","id":5,"method":"ping"}', code: 'malformed_json', rpc: -32700, id: 4 },
  { name: 'nesting deeper than 64', line: `{"jsonrpc":"2.0","id":6,"method":"x","params":{"a":${'['.repeat(70)}${']'.repeat(70)}}}`, code: 'malformed_json', rpc: -32700, id: 6 },
  { name: 'batch', line: '[{"jsonrpc":"2.0","id":7,"method":"ping"}]', code: 'batch_not_allowed', rpc: -32600, id: null },
  { name: 'duplicate key', line: '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"to":"a@x","to":"b@y"}}}', code: 'duplicate_key', rpc: -32700, id: 8 },
  { name: 'case-folded duplicate key', line: '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"to":"a@x","To":"b@y"}}}', code: 'duplicate_key', rpc: -32700, id: 9 },
  { name: 'integer beyond 2^53', line: '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"n":9007199254740993}}}', code: 'number_out_of_range', rpc: -32700, id: 10 },
  { name: 'number that overflows', line: '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"n":1e400}}}', code: 'number_out_of_range', rpc: -32700, id: 11 },
  { name: 'number that does not round-trip', line: '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.0000000000000000001}}}', code: 'number_out_of_range', rpc: -32700, id: 12 },
  { name: 'not JSON-RPC 2.0', line: '{"jsonrpc":"1.0","id":13,"method":"ping"}', code: 'invalid_request', rpc: -32600, id: 13 },
  { name: 'no method, no result', line: '{"jsonrpc":"2.0","id":14}', code: 'invalid_request', rpc: -32600, id: 14 },
  { name: 'tools/call without a name', line: '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"arguments":{}}}', code: 'invalid_request', rpc: -32600, id: 15 },
];

test('every wire refusal is answered with its code and never reaches the server', async () => {
  const { gate, received } = await startGate();
  const before = received().length;
  for (const c of CASES) {
    gate.send(Buffer.concat([Buffer.isBuffer(c.line) ? c.line : Buffer.from(c.line), Buffer.from('\n')]));
    const r = await gate.next();
    assert.equal(r.error?.data?.reason, c.code, c.name);
    assert.equal(r.error.code, c.rpc, c.name);
    assert.equal(r.error.message, `cloakpipe refused: ${c.code}: ${r.error.data.detail}`, 'the detail is in the message too');
    assert.deepEqual(r.id, c.id, c.name);
    assert.equal(typeof r.error.data.entry, 'number', `${c.name}: a refusal is a ledger entry`);
    assert.match(r.error.data.manifest_digest, /^sha256:[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(r).includes(CANARY), 'the refusal does not echo the line');
  }
  // A ping after them proves the gate still serves, and the server saw none of the refused lines.
  gate.send('{"jsonrpc":"2.0","id":"after","method":"ping"}\n');
  assert.equal((await gate.next()).id, 'after');
  const seen = received().slice(before);
  assert.deepEqual(seen, ['{"id":"after","jsonrpc":"2.0","method":"ping"}']);
  assert.equal(await gate.end(), 0);
});

test('a line over the frame limit is refused frame_too_large in bounded memory, and the gate goes on', async () => {
  const { gate, received } = await startGate(['--max-frame', '65536']);
  const big = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"${'A'.repeat(5 * 1024 * 1024)}"}}}\n`;
  gate.send(big);
  const r = await gate.next();
  assert.equal(r.error.data.reason, 'frame_too_large');
  assert.equal(r.error.code, -32700);
  assert.equal(r.id, 1, 'the id is read by a bounded scan, even from a line too large to keep');
  gate.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"small"}}}\n');
  const ok = await gate.next();
  assert.equal(ok.id, 2);
  assert.ok(ok.result);
  assert.ok(!received().some((l) => l.includes('AAAA')));
  await gate.end();
});

test('an allowed call reaches the server re-serialized (RFC 8785), never as the raw line', async () => {
  const { gate, received } = await startGate();
  const raw = '{ "params" : { "arguments" : { "text" : "h\\u00e9llo", "n" : 1.50 }, "name":"echo" }, "method":"tools/call", "id":7, "jsonrpc":"2.0" }';
  gate.send(raw + '\n');
  const r = await gate.next();
  assert.equal(r.id, 7);
  assert.deepEqual(r.result.structuredContent.received, { text: 'héllo', n: 1.5 });
  const line = received().find((l) => l.includes('tools/call'))!;
  assert.notEqual(line, raw);
  assert.equal(line, canonicalize(JSON.parse(raw)));
  await gate.end();
});

test('gate-level _meta (receipts, operation ids) is not forwarded; the rest of _meta is', async () => {
  const { gate, received } = await startGate();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, _meta: { progressToken: 5, 'cloakpipe/operation_id': 'op-1' } } }) + '\n');
  await gate.next();
  const line = JSON.parse(received().find((l) => l.includes('tools/call'))!);
  assert.deepEqual(line.params._meta, { progressToken: 5 });
  await gate.end();
});

test('a request id already in flight is refused, not confused with the first', async () => {
  const { gate, received } = await startGate(['--call-timeout', '1s']);
  gate.send('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"hang","arguments":{}}}\n');
  await new Promise((r) => setTimeout(r, 300));
  gate.send('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{}}}\n');
  const second = await gate.next();
  assert.equal(second.error.data.reason, 'invalid_request');
  // The hanging call's outcome is unknown after --call-timeout: the host is told so.
  const first = await gate.next();
  assert.equal(first.id, 'dup');
  assert.equal(first.error.data.reason, 'outcome_unknown');
  assert.equal(received().filter((l) => l.includes('"echo"')).length, 0);
  await gate.end();
});

test('after --call-timeout the late answer never reaches the host, and its id is not reusable until it came', async () => {
  const { gate } = await startGate(['--call-timeout', '300ms']);
  gate.send('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{}}}\n');
  const first = await gate.next();
  assert.equal(first.error.data.reason, 'outcome_unknown');
  gate.send('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{}}}\n');
  assert.equal((await gate.next()).error.data.reason, 'invalid_request', 'the id is still in flight upstream');
  await new Promise((r) => setTimeout(r, 2500)); // the late answer arrives at the gate meanwhile
  gate.send('{"jsonrpc":"2.0","id":"p","method":"ping"}\n');
  const next = await gate.next();
  assert.equal(next.id, 'p', 'the late answer was dropped, not delivered as a second answer to id 9');
  gate.send('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{}}}\n');
  assert.ok((await gate.next()).result, 'the id is free again once the late answer came');
  await gate.end();
});
