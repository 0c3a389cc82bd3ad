// What the gate records for the inbox, through the real binary: one request per call however
// often it is refused (refreshed: the newest refusal's entry), none in shadow mode (the call was
// forwarded), none for a call that brought an invalid receipt; the values are in the operations
// store and nowhere in the ledger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openHome } from '../../src/home/open.js';
import type { ApprovalRequest } from '../../src/store/ports.js';
import { call, ledger, records, setup, startGate, type Setup } from '../helpers/recording-gate.js';

async function pending(s: Setup): Promise<ApprovalRequest[]> {
  const h = openHome({ home: s.home });
  try {
    return await h.store.transact(() => h.store.approvalRequests.pending(new Date().toISOString(), 100));
  } finally {
    h.close();
  }
}

test('one request per call, refreshed by each refusal; none for an invalid receipt; values only in the store', async () => {
  const s = setup();
  const g = await startGate(s, { flags: ['--request-ttl', '10m'] });
  try {
    const args = { to: 'requests-canary-91c2@example.com', body: 'once' };
    const first = await call(g, 'send_email', args);
    const second = await call(g, 'send_email', args);
    assert.ok(!first.ok && !second.ok && first.reason === 'approval_required' && second.reason === 'approval_required');
    const [r, ...rest] = await pending(s);
    assert.equal(rest.length, 0, 'one request for one call');
    assert.equal(r.entry, second.data.entry, "the newest refusal's entry");
    assert.equal(r.fingerprint, first.data.fingerprint);
    assert.equal(r.call, JSON.stringify({ arguments: { body: 'once', to: 'requests-canary-91c2@example.com' }, tool: 'send_email' }));
    assert.equal(r.task, 'T-77');
    assert.equal(Date.parse(r.expires_at) - Date.parse(r.created_at), 600_000);

    const invalid = await call(g, 'send_email', { to: 'other@example.com' }, { 'cloakpipe/approval': 'not a receipt' });
    assert.ok(!invalid.ok && invalid.reason === 'approval_invalid');
    assert.equal((await pending(s)).length, 1, 'approval_invalid is no request');
    assert.ok(!JSON.stringify(ledger(s)).includes('requests-canary-91c2'), 'the ledger keeps digests');
    assert.ok(!g.stderr().includes('requests-canary-91c2'));
  } finally {
    await g.close();
  }
});

test('shadow mode forwards the call and records no request', async () => {
  const s = setup();
  const g = await startGate(s, { flags: ['--mode', 'shadow'] });
  try {
    const r = await call(g, 'send_email', { to: 'shadow@example.com' });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(records(s).length, 1);
    assert.equal((await pending(s)).length, 0);
    assert.ok(ledger(s).some((e) => e.outcome === 'would_refuse' && e.reason === 'approval_required'));
  } finally {
    await g.close();
  }
});
