// Shadow mode forwards every call and records what enforce would have done: no replay (the
// tool runs again), would-refuse entries for missing approvals and in-flight duplicates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, ledger, records, setup, startGate } from '../helpers/recording-gate.js';

test('shadow: a repeated write is forwarded and noted would_replay; a missing approval is would_refuse', async () => {
  const s = setup();
  const g = await startGate(s, { flags: ['--mode', 'shadow'] });
  try {
    const args = { text: 'shadowed', key: 'sh-1' };
    const a = await call(g, 'write_note', args);
    const b = await call(g, 'write_note', args);
    assert.ok(a.ok && b.ok);
    assert.notEqual(a.ok && a.text, b.ok && b.text, 'the second answer is the tool\'s, not a replay');
    assert.equal(records(s).filter((r) => r.tool === 'write_note').length, 2);
    const e = await call(g, 'send_email', { to: 'x@example.com' });
    assert.ok(e.ok, 'forwarded without approval in shadow');
    const entries = ledger(s).filter((x) => x.kind === 'decision');
    assert.equal(entries[1].operation_shadow, 'would_replay');
    const would = entries.find((x) => x.tool === 'send_email');
    assert.equal(would?.outcome, 'would_refuse');
    assert.equal(would?.reason, 'approval_required');
  } finally {
    await g.close();
  }
});
