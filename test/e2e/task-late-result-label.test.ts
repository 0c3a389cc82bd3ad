// A call sent with a task that outlives --call-timeout ends outcome unknown, yet its task runs on
// and the host can still fetch its result (tasks/result) once the server has it. That result is
// the tool's output all the same: the label rises by the tool's `returns` before the host can
// send anything else. Before, it passed as server output, classified only, and a public sink
// stayed open to a confidential report. The real gate binary, the official SDK's task stream,
// @modelcontextprotocol/server-everything's simulate-research-query (five stages of a second).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, fixtureFiles, PERMIT_ALL } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: task-late-result@1
labels: [public, confidential]
tools:
  simulate-research-query:
    effect: read
    returns: confidential
    accepts: confidential
    arguments:
      topic: { type: string, max_len: 200, required: true }
  echo: { effect: read, accepts: public, arguments: { message: { type: string, max_len: 200, required: true } } }
`;

test('a task result fetched after its call timed out raises the label by the tool; the public sink is refused', { timeout: 120_000 }, async () => {
  const f = fixtureFiles('cloakpipe-task-late-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-late' } } });
  const g = await startGate({ ...f, flags: ['--call-timeout', '1s'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  let sink: string;
  const seen: string[] = [];
  try {
    await g.client.listTools(); // the SDK sends a task only for a tool it knows needs one
    for await (const m of g.client.experimental.tasks.callToolStream({ name: 'simulate-research-query', arguments: { topic: 'payroll' } }, undefined, { timeout: 30_000 })) seen.push(m.type);
    const after = await call(g, 'echo', { message: 'status: green' });
    sink = after.ok ? 'ok' : after.reason;
  } finally {
    await g.close();
  }
  assert.deepEqual(seen.slice(-1), ['result'], 'the host fetched the result after the call had ended');
  const ledger = ledgerOf(f.home);
  assert.deepEqual(ledger.filter((e) => e.kind === 'result').map((e) => [e.outcome, e.why]).slice(0, 1), [['unknown', 'timeout']]);
  assert.equal(sink, 'sink_ceiling_exceeded');
  assert.deepEqual(ledger.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.tool]), [['public', 'confidential', 'simulate-research-query']]);
});
