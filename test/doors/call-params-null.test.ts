// A tools/call whose `arguments`, `_meta` or `task` is null. Straight to the SDK's server
// (server-everything) each is refused (or dropped) before the tool runs: all are objects when
// present. The gate read null as absent and forwarded `arguments: {}`, no _meta, or `task: {}` (a
// call sent with a task): the server ran the tool. The gate must not accept, record or forward a
// shape the server reads otherwise: each is refused invalid_request and recorded.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, makeHome, writeFiles } from '../helpers/cli.js';
import { RawGate, RawPeer } from '../helpers/raw-gate.js';
import { answerTo, callRaw, openSession } from '../helpers/raw-session.js';
import { ledgerOf } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: params-null@1
tools:
  toggle-simulated-logging: { effect: write, arguments: {} }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': 'permit (principal, action, resource);\n' });
});

// Each toggle its own operation: whatever became of an earlier one, the next is forwarded, and
// its answer says whether the logging was on.
const toggle = (peer: RawPeer, id: number, extra: object) =>
  callRaw(peer, id, 'toggle-simulated-logging', { arguments: {}, _meta: { 'cloakpipe/operation_id': `toggle-${id}` }, ...extra });

/**
 * The answer to a call with `extra` in its params (null when the server let it go unanswered:
 * the SDK's server drops a call whose _meta is null), and whether the tool ran. The next toggle
 * is sent right behind it and read to its answer, skipping what comes on the way.
 */
async function withParams(peer: RawPeer, extra: object, answered: boolean): Promise<{ answer: any; ran: boolean }> {
  await openSession(peer);
  const params = { name: 'toggle-simulated-logging', arguments: {}, _meta: { 'cloakpipe/operation_id': 'toggle-1' }, ...extra };
  peer.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }) + '\n');
  const answer = answered ? await answerTo(peer, 1) : null;
  const next = await toggle(peer, 2, {});
  const ran = /^Stopped/.test(next.result.content[0].text);
  if (!ran) await toggle(peer, 3, {}); // the logging it started would keep the server running
  await peer.end();
  return { answer, ran };
}

for (const member of ['arguments', '_meta', 'task']) {
  test(`${member}: null is refused before the tool runs, straight to server-everything and through the gate`, { timeout: 180_000 }, async () => {
    const direct = await withParams(new RawPeer([process.execPath, EVERYTHING, 'stdio']), { [member]: null }, member !== '_meta');
    if (direct.answer) assert.ok(direct.answer.error, 'the server refuses it');
    assert.equal(direct.ran, false, 'straight, the tool did not run');
    const home = makeHome();
    const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
    const gated = await withParams(gate, { [member]: null }, true);
    assert.equal(gated.answer.error?.data?.reason, 'invalid_request', `answered ${JSON.stringify(gated.answer)}`);
    assert.equal(gated.ran, false, 'through the gate, the tool did not run');
    const entry = ledgerOf(home).find((e) => e.seq === gated.answer.error.data.entry);
    assert.equal(entry?.reason, 'invalid_request', 'recorded');
  });
}
