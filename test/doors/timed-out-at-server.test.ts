// A call ended by --call-timeout keeps its place at the server as a cancelled one does (ADR 122,
// amending 109): the gate stopped waiting, but a server that never answers may still be running
// it. Before, such calls were not counted, and a host whose calls time out had the server sent
// new ones beside every call it was still running. Real binary; the suite's upstream, whose
// `hang` never answers and ignores every cancellation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { decisions, ledgerOf, waitFor } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';

const MANIFEST = `version: 1
release: timed-out-at-server@1
tools:
  hang: { effect: write, arguments: { n: { type: integer } } }
`;
const MAX_IN_FLIGHT = 2;
// Long enough that the timed-out calls still hold their places while the later rounds run.
const CALL_TIMEOUT = '20s';

const call = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hang', arguments: { n: id } } }) + '\n';
const cancel = (id: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user' } }) + '\n';

test('calls ended by --call-timeout count among the calls at the server: past twice --max-in-flight a call waits, and its cancel leaves it unsent', { timeout: 600_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const lines = join(tempDir(), 'lines.jsonl');
  const gate = new RawGate({
    home, manifest: f['m.yaml'], policy: f['p.cedar'],
    flags: ['--max-in-flight', String(MAX_IN_FLIGHT), '--call-timeout', CALL_TIMEOUT],
    upstream: [process.execPath, helperScript('upstream.js')],
    env: { RECORD_LINES: lines, RECORDER_MODE: 'hang' },
  });
  await gate.initialize();
  const atServer = () => (existsSync(lines) ? readFileSync(lines, 'utf8').split('\n').filter((l) => l.includes('"tools/call"')).length : 0);
  // Two calls the server keeps: the gate gives up on both (-32003), the server works on.
  gate.send(call(1) + call(2));
  const ended = [await gate.next(120_000), await gate.next(120_000)];
  assert.deepEqual(ended.map((r) => r.error?.code), [-32003, -32003], JSON.stringify(ended));
  // Then call, cancel (a place each at the server), and a last call past the bound.
  for (let i = 3; i <= 5; i++) {
    gate.send(call(i));
    await waitFor(() => decisions(home).length === i, 120_000, `call ${i} to be decided`);
    // A round trip through the server: a call forwarded before this ping has reached it.
    gate.send(JSON.stringify({ jsonrpc: '2.0', id: `ping-${i}`, method: 'ping' }) + '\n');
    assert.equal((await gate.next(60_000)).id, `ping-${i}`, 'the host is read');
    gate.send(cancel(i));
  }
  await waitFor(() => ledgerOf(home).filter((e) => e.kind === 'result').length === 5, 120_000, 'every call to end');
  // Before, call 5 reached the server beside the four it was running (cancelled or timed out).
  assert.equal(atServer(), 2 * MAX_IN_FLIGHT, 'calls the server was sent and never answered');
  const outcomes = ledgerOf(home).filter((e) => e.kind === 'result').map((e) => e.outcome);
  assert.deepEqual(outcomes, ['unknown', 'unknown', 'unknown', 'unknown', 'not_forwarded']);
  assert.equal(await gate.end(), 0);
});
