// A call sent with a task that the server answers with an error instead of its task. The
// official SDK's server (here @modelcontextprotocol/server-everything) runs a tool that does not
// support tasks all the same, then refuses its own result ("Invalid task creation result"): the
// error does not say the call did not run. Taken as `failed`, a write with an operation id was
// forwarded again on retry and ran twice; it must end outcome unknown, its retry
// reconcile_before_retry. The server's own behaviour is shown straight first, so the test does
// not rest on a guess about it.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, cloakpipe, makeHome, writeFiles } from '../helpers/cli.js';
import { RawGate, RawPeer } from '../helpers/raw-gate.js';
import { callRaw, openSession as open } from '../helpers/raw-session.js';

const MANIFEST = `version: 1
release: task-refused@1
tools:
  toggle-simulated-logging: { effect: write, arguments: {} }
`;
const POLICY = 'permit (principal, action, resource);\n';
const OP = { 'cloakpipe/operation_id': 'op-toggle-1' };

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY });
});

const toggle = (peer: RawPeer, id: number, extra: object) => callRaw(peer, id, 'toggle-simulated-logging', { arguments: {}, ...extra });

test('straight to server-everything: a call sent with a task to a tool without task support runs, then is answered with an error', { timeout: 120_000 }, async () => {
  const server = new RawPeer([process.execPath, EVERYTHING, 'stdio']);
  await open(server);
  const first = await toggle(server, 1, { task: { ttl: 60_000 } });
  assert.ok(first.error, 'the server answers with an error');
  const second = await toggle(server, 2, {});
  assert.match(second.result.content[0].text, /^Stopped/, 'the first call had started the logging: it ran');
  await server.end();
});

test('through the gate: that error ends the write outcome unknown, and its retry is reconcile_before_retry, not run again', { timeout: 120_000 }, async () => {
  const home = makeHome();
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  await open(gate);
  const first = await toggle(gate, 1, { task: { ttl: 60_000 }, _meta: OP });
  assert.equal(first.error?.code, -32003, `answered ${JSON.stringify(first)}`);
  assert.equal(first.error.data.reason, 'outcome_unknown');
  const retry = await toggle(gate, 2, { _meta: OP });
  assert.equal(retry.error?.data?.reason, 'reconcile_before_retry', `the retry was answered ${JSON.stringify(retry)}`);
  await gate.end();
  const ops = cloakpipe(['ops', 'list', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(ops.map((o) => [o.id, o.state]), [['op-toggle-1', 'unknown']]);
});
