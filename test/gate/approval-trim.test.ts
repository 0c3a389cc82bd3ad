// The gate's trim of approval requests (ADR 058) runs in the refusal's transaction: when it
// fails, the call is refused fail_closed (never forwarded) and nothing of the decision is kept,
// the request included; once the store works again the same call waits for approval as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { StoreError } from '../../src/store/ports.js';
import { makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { MANIFEST } from '../helpers/recording-gate.js';

test('a failing trim refuses the call fail_closed, forwards nothing and records no request', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home: makeHome(), manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  const requests = opened.store.approvalRequests;
  const trim = requests.trim.bind(requests);
  let forwarded = 0;
  const forward = () => (forwarded++, Promise.resolve({ result: { content: [{ type: 'text' as const, text: 'sent' }] } }));
  const call = { tool: 'send_email', arguments: { to: 'trim-fails@example.com' }, meta: {} };
  const pending = () => opened.store.transact(() => requests.pending(new Date().toISOString(), 10));
  try {
    requests.trim = () => {
      throw new StoreError('the store failed while trimming');
    };
    const failed = await opened.gate.handleCall(call, forward);
    assert.equal(failed.kind, 'refused', JSON.stringify(failed));
    assert.equal((failed as { data: { reason: string } }).data.reason, 'fail_closed');
    assert.deepEqual(await pending(), [], 'the request went with the rolled-back decision');

    requests.trim = trim;
    const waits = await opened.gate.handleCall(call, forward);
    assert.equal(waits.kind, 'refused');
    assert.equal((waits as { data: { reason: string } }).data.reason, 'approval_required');
    assert.equal((await pending()).length, 1);
    assert.equal(forwarded, 0, 'nothing was forwarded');
  } finally {
    requests.trim = trim;
    await opened.close('test');
  }
});
