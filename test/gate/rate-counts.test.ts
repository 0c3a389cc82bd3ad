// The gate counts for a call only what the policies that can apply to its tool read (the other
// count never reaches Cedar). Both limits still hold: a per-tool limit read as context.calls and
// a task-wide one read as context.calls_all, each on a tool whose policies read only that one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { makeHome, writeFiles } from '../helpers/cli.js';

const MANIFEST = `version: 1
release: rate-counts@1
tools:
  search:
    effect: read
    arguments:
      q: { type: string, max_len: 64 }
  fetch:
    effect: read
    arguments:
      id: { type: string, max_len: 64 }
`;

const POLICY = `permit (principal, action, resource);
@id("search-per-minute") forbid (principal, action, resource == Tool::"search") when { context.calls.minute >= 2 };
@id("task-per-minute") forbid (principal, action, resource == Tool::"fetch") when { context.calls_all.minute >= 3 };
`;

const answered = () => Promise.resolve({ result: { content: [{ type: 'text', text: 'ok' }] } });

test('a per-tool limit and a task-wide limit, each on a tool whose policies read only that count, both hold', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY });
  const opened = await openGate({ home: makeHome(), manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  try {
    const policy = opened.gate.parts.rules.current().policy;
    assert.deepEqual(policy.countsRead?.('search'), { calls: true, callsAll: false });
    assert.deepEqual(policy.countsRead?.('fetch'), { calls: false, callsAll: true });
    const call = async (tool: string) => {
      const o = await opened.gate.handleCall({ tool, arguments: tool === 'search' ? { q: 'x' } : { id: 'y' }, meta: {} }, answered);
      return o.kind === 'refused' ? `refused:${o.data.reason}` : o.kind;
    };
    // search: two allowed in the minute, the third refused by its own count.
    assert.deepEqual([await call('search'), await call('search'), await call('search')], ['forwarded', 'forwarded', 'refused:policy_denied']);
    // fetch: the task has two allowed calls (the searches), so one more fetch is allowed, then
    // the task-wide count (3) refuses; fetch's own count (1) would not have.
    assert.deepEqual([await call('fetch'), await call('fetch')], ['forwarded', 'refused:policy_denied']);
  } finally {
    await opened.close('test');
  }
});
