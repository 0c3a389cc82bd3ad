// A tools/call whose `task` is null. Straight to the SDK's server (server-everything) it is
// refused before the tool runs (a task is an object). The gate read null as "no task given"
// and forwarded `task: {}`, a call sent with a task: the server ran the tool. The gate must not
// forward a call that means something else than what the host sent: refused invalid_request.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, makeHome, writeFiles } from '../helpers/cli.js';
import { RawGate, RawPeer } from '../helpers/raw-gate.js';
import { callRaw, openSession } from '../helpers/raw-session.js';

const MANIFEST = `version: 1
release: task-null@1
tools:
  toggle-simulated-logging: { effect: write, arguments: {} }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': 'permit (principal, action, resource);\n' });
});

// Each toggle its own operation (an operation id apiece): whatever became of an earlier one,
// the next is forwarded, and its answer says whether the logging was on.
const toggle = (peer: RawPeer, id: number, extra: object) =>
  callRaw(peer, id, 'toggle-simulated-logging', { arguments: {}, _meta: { 'cloakpipe/operation_id': `toggle-${id}` }, ...extra });

/** The answer to a call with `task: null`, and whether the tool ran (a plain toggle then stops what it started). */
async function taskNull(peer: RawPeer): Promise<{ answer: any; ran: boolean }> {
  await openSession(peer);
  const answer = await toggle(peer, 1, { task: null });
  const next = await toggle(peer, 2, {});
  const ran = /^Stopped/.test(next.result.content[0].text);
  if (!ran) await toggle(peer, 3, {}); // the logging it started would keep the server running
  await peer.end();
  return { answer, ran };
}

test('task: null is refused before the tool runs, straight to server-everything and through the gate', { timeout: 180_000 }, async () => {
  const direct = await taskNull(new RawPeer([process.execPath, EVERYTHING, 'stdio']));
  assert.ok(direct.answer.error, 'the server refuses it');
  assert.equal(direct.ran, false, 'straight, the tool did not run');
  const gate = new RawGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  const gated = await taskNull(gate);
  assert.equal(gated.answer.error?.data?.reason, 'invalid_request', `answered ${JSON.stringify(gated.answer)}`);
  assert.equal(gated.ran, false, 'through the gate, the tool did not run');
});
