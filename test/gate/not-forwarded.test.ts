// A call the gate allowed and then never forwarded (the host withdrew it, the session ended):
// nothing ran, so its operation settles failed and may be retried, and the session's label does
// not move. Each check says what it undoes through its own not-forwarded hook; nothing relies
// on where the session's effect sits among the after-reply effects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { NotForwarded } from '../../src/gate/gate.js';
import { makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/support-desk.js';

const MANIFEST = `version: 1
release: not-forwarded@1
labels: [public, confidential]
tools:
  fetch_report:
    effect: write
    returns: confidential
    operation_id: key
    arguments:
      key: { type: string, max_len: 64 }
`;

const withdrawn = () => Promise.reject(new NotForwarded('cancelled by the host before forwarding'));
const answered = () => Promise.resolve({ result: { content: [{ type: 'text', text: 'report' }] } });

test('allowed, then withdrawn before forwarding: the operation may be retried and the label stays', async () => {
  const home = makeHome();
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home, manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  try {
    const { gate } = opened;
    const call = { tool: 'fetch_report', arguments: { key: 'op-1' }, meta: {} };
    const first = await gate.handleCall(call, withdrawn);
    assert.equal(first.kind, 'not_forwarded');
    assert.equal(gate.session.label, 'public', 'nothing came back: the label does not rise');
    // The operation's hook settled the attempt as failed: the same operation runs again. Had the
    // gate skipped the first after-reply effect (assuming it was the session's), the attempt
    // would still be pending and this retry refused reconcile_before_retry.
    const retry = await gate.handleCall(call, answered);
    assert.equal(retry.kind, 'forwarded', JSON.stringify(retry));
    assert.equal(gate.session.label, 'confidential', 'a real answer raises it');
  } finally {
    await opened.close('test');
  }
  const results = ledgerOf(home).filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => e.outcome), ['not_forwarded', 'ok']);
});
