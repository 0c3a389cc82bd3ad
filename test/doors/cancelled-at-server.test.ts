// Calls the host cancelled after the server was sent them are bounded at the server (ADR 109).
// A cancelled call frees its --max-in-flight place at once (the host is read on), but MCP lets a
// server ignore the cancellation and run on: with nothing else, call+cancel+call+cancel had the
// server running as many calls as the host cared to send. Now the calls the server was sent and
// has not answered, cancelled or not, are at most twice --max-in-flight; a new call waits before
// the server for a place, and the host, still read, may cancel it there. Real binary; the
// suite's upstream, whose `hang` never answers and ignores every cancellation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { decisions, ledgerOf, waitFor } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';

const MANIFEST = `version: 1
release: cancelled-at-server@1
tools:
  hang: { effect: write, arguments: { n: { type: integer } } }
  echo: { effect: write, arguments: { text: { type: string } } }
`;
const MAX_IN_FLIGHT = 2;
const ROUNDS = 6;

const call = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hang', arguments: { n: id } } }) + '\n';
const echo = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: String(id) } } }) + '\n';
const cancel = (id: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user' } }) + '\n';

test('call, cancel, call, cancel against a server that never answers: it is sent --max-in-flight of them, and the host is still read', { timeout: 600_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const lines = join(tempDir(), 'lines.jsonl');
  const gate = new RawGate({
    home, manifest: f['m.yaml'], policy: f['p.cedar'],
    flags: ['--max-in-flight', String(MAX_IN_FLIGHT), '--call-timeout', '600s'],
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_LINES: lines, RECORDER_MODE: 'hang' },
  });
  await gate.initialize();
  const atServer = () => (existsSync(lines) ? readFileSync(lines, 'utf8').split('\n').filter((l) => l.includes('"tools/call"')).length : 0);
  for (let i = 1; i <= ROUNDS; i++) {
    gate.send(call(i));
    // Decided and recorded: the gate forwards it now, or holds it.
    await waitFor(() => decisions(home).length === i, 120_000, `call ${i} to be decided`);
    // A round trip through the server: a call forwarded before this ping has reached it.
    gate.send(JSON.stringify({ jsonrpc: '2.0', id: `ping-${i}`, method: 'ping' }) + '\n');
    const pong = await gate.next(60_000);
    assert.equal(pong.id, `ping-${i}`, `the host is read while calls are cancelled: ${JSON.stringify(pong)}`);
    gate.send(cancel(i));
  }
  gate.send('{"jsonrpc":"2.0","id":"last","method":"ping"}\n');
  assert.equal((await gate.next(60_000)).id, 'last');
  // Before, each round's call reached the server: 6 running there at once.
  assert.equal(atServer(), 2 * MAX_IN_FLIGHT, 'calls the server was sent and never answered');
  await waitFor(() => ledgerOf(home).filter((e) => e.kind === 'result').length === ROUNDS, 120_000, 'every call to end');
  const results = ledgerOf(home).filter((e) => e.kind === 'result').map((e) => e.outcome);
  assert.equal(results.filter((o) => o === 'unknown').length, 2 * MAX_IN_FLIGHT, 'the cancelled calls the server had: unknown');
  assert.equal(results.filter((o) => o === 'not_forwarded').length, ROUNDS - 2 * MAX_IN_FLIGHT, 'the held ones ran nowhere');
  assert.equal(await gate.end(), 0);
});

test('a call held for a place at the server goes on once the server answers a cancelled one', { timeout: 600_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const dir = tempDir();
  const release = join(dir, 'release');
  const gate = new RawGate({
    home, manifest: f['m.yaml'], policy: f['p.cedar'],
    flags: ['--max-in-flight', '1', '--call-timeout', '600s'],
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_LINES: join(dir, 'lines.jsonl'), RECORDER_MODE: 'held', RECORDER_RELEASE_FILE: release },
  });
  await gate.initialize();
  const lines = join(dir, 'lines.jsonl');
  const atServer = () => (existsSync(lines) ? readFileSync(lines, 'utf8').split('\n').filter((l) => l.includes('"tools/call"')).length : 0);
  for (const i of [1, 2]) {
    gate.send(echo(i));
    await waitFor(() => atServer() === i, 120_000, `call ${i} to reach the server`);
    gate.send(cancel(i));
  }
  gate.send(echo(3));
  await waitFor(() => decisions(home).length === 3, 120_000, 'call 3 to be decided');
  // The server answers calls 1 and 2 (dropped: the host cancelled them), then call 3, sent in their place.
  assert.equal(atServer(), 2, 'call 3 is held');
  writeFileSync(release, '');
  const r = await gate.next(60_000);
  assert.equal(r.id, 3);
  assert.ok(r.result, JSON.stringify(r.error));
  assert.equal(await gate.end(), 0);
  const results = ledgerOf(home).filter((e) => e.kind === 'result').map((e) => `${e.outcome} ${e.why ?? ''}`);
  assert.deepEqual(results.sort(), ['ok ', 'unknown cancelled', 'unknown cancelled']);
});

test('the host leaves while a call is held for a place at the server: it is never sent, recorded not forwarded, and the gate ends', { timeout: 600_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const lines = join(tempDir(), 'lines.jsonl');
  const gate = new RawGate({
    home, manifest: f['m.yaml'], policy: f['p.cedar'],
    flags: ['--max-in-flight', '1', '--call-timeout', '600s'],
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_LINES: lines, RECORDER_MODE: 'hang' },
  });
  await gate.initialize();
  const atServer = () => (existsSync(lines) ? readFileSync(lines, 'utf8').split('\n').filter((l) => l.includes('"tools/call"')).length : 0);
  for (const i of [1, 2]) {
    gate.send(call(i));
    await waitFor(() => atServer() === i, 120_000, `call ${i} to reach the server`);
    gate.send(cancel(i));
  }
  gate.send(call(3));
  await waitFor(() => decisions(home).length === 3, 120_000, 'call 3 to be decided');
  gate.child.stdin!.end();
  // Before, the held call kept the gate until the cancelled calls' --call-timeout (600 s).
  const ended = await Promise.race([gate.exited, new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
  assert.equal(ended, 0);
  assert.equal(atServer(), 2, 'call 3 never reached the server');
  const results = ledgerOf(home).filter((e) => e.kind === 'result').map((e) => `${e.outcome} ${e.why ?? ''}`);
  assert.deepEqual(results.sort(), ['not_forwarded ', 'unknown cancelled', 'unknown cancelled']);
});
