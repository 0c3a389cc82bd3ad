// A forwarded call the host cancels gives up its place in --max-in-flight at once. MCP lets a
// server leave a cancelled request unanswered, and the SDK's server does: the gate waited for
// --call-timeout, and at --max-in-flight 1 the host was not read meanwhile. Now the call ends
// when it is cancelled, recorded outcome unknown (it was received; it may have run), and an
// answer the server still sends for it never reaches the host. Real binary; the SDK client as
// host; server-everything, and the suite's recording server answering late.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { EVERYTHING, helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { startGate, ledgerOf, waitFor } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';

const MANIFEST = `version: 1
release: cancel-frees-place@1
tools:
  trigger-long-running-operation:
    effect: write
    arguments: { duration: { type: number }, steps: { type: integer } }
  echo: { effect: write, arguments: { text: { type: string } } }
`;
// Far beyond any wait below: a ping that waits for the call's timeout fails the test.
const FLAGS = ['--max-in-flight', '1', '--call-timeout', '600s'];

test('the SDK client cancels a call server-everything never answers: the next request is read at once, the call ends unknown', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const gate = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: FLAGS, upstream: [process.execPath, EVERYTHING] });
  const abort = new AbortController();
  let progressed!: () => void;
  const progress = new Promise<void>((r) => (progressed = r));
  const call = gate.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 500, steps: 500 } }, undefined, { signal: abort.signal, timeout: 600_000, onprogress: () => progressed() });
  await progress; // the server is running it
  abort.abort('the user stopped it');
  await assert.rejects(call);
  // Before, this ping waited in the pipe for the call's --call-timeout.
  await gate.client.ping({ timeout: 60_000 });
  await waitFor(() => ledgerOf(home).some((e) => e.kind === 'result'), 60_000, 'the call to be recorded');
  const result = ledgerOf(home).find((e) => e.kind === 'result')!;
  assert.equal(result.outcome, 'unknown');
  assert.equal(result.why, 'cancelled');
  await gate.close();
});

test('an answer that comes after the cancellation never reaches the host, and the call stays unknown', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const dir = tempDir();
  const done = join(dir, 'done.jsonl');
  const gate = new RawGate({
    home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: FLAGS,
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_FILE: join(dir, 'record.jsonl'), DONE_FILE: done, RECORDER_MODE: 'slow', RECORDER_DELAY_MS: '3000' },
  });
  await gate.initialize();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' } } }) + '\n');
  await waitFor(() => existsSync(join(dir, 'record.jsonl')), 60_000, 'the server to receive the call');
  gate.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user' } }) + '\n');
  gate.send('{"jsonrpc":"2.0","id":"freed","method":"ping"}\n');
  assert.equal((await gate.next(60_000)).id, 'freed', 'read while the cancelled call is still running at the server');
  // The server answers id 7 now; the host has cancelled it and must not see the answer.
  await waitFor(() => existsSync(done) && readFileSync(done, 'utf8').length > 0, 60_000, 'the server to answer');
  gate.send('{"jsonrpc":"2.0","id":"after","method":"ping"}\n');
  assert.equal((await gate.next(60_000)).id, 'after', 'no answer for the cancelled id');
  await gate.end();
  const results = ledgerOf(home).filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => [e.outcome, e.why]), [['unknown', 'cancelled']], 'one record: the late answer does not settle it');
});
