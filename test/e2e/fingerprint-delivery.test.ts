// ADR 089: a call's `_meta` and `task` say how it is delivered, not what it does, and stay out
// of its fingerprint. A retry carries a new progress token, or none, or no task: were they in
// the fingerprint, the retry of a call whose outcome is unknown would be another call, and run.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { callRaw, openSession } from '../helpers/raw-session.js';

const MANIFEST = `version: 1
release: fingerprint-delivery@1
tools:
  toggle-simulated-logging: { effect: write, arguments: {} }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

test('a retry that differs from a call of unknown outcome only in _meta and task is the same call: reconcile_before_retry', { timeout: 120_000 }, async () => {
  const gate = new RawGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  await openSession(gate);
  // Sent with a task to a tool without task support: server-everything runs it and answers an error (unknown).
  const first = await callRaw(gate, 1, 'toggle-simulated-logging', { arguments: {}, task: { ttl: 60_000 }, _meta: { progressToken: 'first' } });
  assert.equal(first.error?.data?.reason, 'outcome_unknown', JSON.stringify(first));
  for (const [id, delivery] of [[2, { _meta: { progressToken: 'retry' } }], [3, { task: { ttl: 1000 } }], [4, {}]] as const) {
    const retry = await callRaw(gate, id, 'toggle-simulated-logging', { arguments: {}, ...delivery });
    assert.equal(retry.error?.data?.reason, 'reconcile_before_retry', `${JSON.stringify(delivery)}: ${JSON.stringify(retry)}`);
    assert.equal(retry.error.data.fingerprint, first.error.data.fingerprint);
  }
  await gate.end();
});
