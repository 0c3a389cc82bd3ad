// A server answers a call with a line longer than the gate reads from a server (64 MiB) that
// never ends. The line was reported only at its end, so the call waited for --call-timeout.
// Now the call ends as soon as the line has named it (its id and result come first) and passed
// the limit: outcome unknown, recorded. A server request of that size under the same id (a
// server's ids are its own) ends nothing: the call is then answered as the server answers it.
// Real binary, raw host, a server that writes such lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helperScript, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { ledgerOf, waitFor } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';
import { answerTo } from '../helpers/raw-session.js';

const MANIFEST = `version: 1
release: upstream-endless-line@1
tools:
  endless: { effect: write, arguments: {} }
  asks_first: { effect: read, arguments: {} }
`;
// Far beyond any wait below: an answer that comes only at the call's timeout fails the test.
const FLAGS = ['--call-timeout', '600s'];

function start() {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const gate = new RawGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: FLAGS, upstream: [process.execPath, helperScript('endless-server.js')] });
  return { gate, home };
}

const call = (id: number, name: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }) + '\n';

test('an answer that passes the limit and never ends: the call ends unknown once the line passed the limit', { timeout: 300_000 }, async () => {
  const { gate, home } = start();
  await gate.initialize();
  gate.send(call(1, 'endless'));
  const answer = await answerTo(gate, 1, 120_000);
  assert.equal(answer.error?.code, -32003, JSON.stringify(answer).slice(0, 300));
  await waitFor(() => ledgerOf(home).some((e) => e.kind === 'result'), 60_000, 'the result entry');
  assert.equal(ledgerOf(home).find((e) => e.kind === 'result')!.outcome, 'unknown');
  gate.child.kill('SIGTERM');
  await gate.exited;
});

test("a server request of that size under the call's id ends nothing: the call gets the server's answer", { timeout: 300_000 }, async () => {
  const { gate } = start();
  await gate.initialize();
  gate.send(call(1, 'asks_first'));
  const answer = await answerTo(gate, 1, 120_000);
  assert.deepEqual(answer.result?.content, [{ type: 'text', text: 'answered' }], JSON.stringify(answer).slice(0, 300));
  await gate.end();
});
