// The confine command's exit code, as confinement.md gives it, and one case it left open: a
// session whose container could not be removed did not end normally, however the agent ended.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exitCodeOf, type Summary } from '../../src/confine/bridge.js';

const base: Summary = {
  ended: 'finished',
  reason: null,
  violations: [],
  allowed: 1,
  denied: 0,
  calls: 1,
  stdout_bytes: 0,
  stderr_bytes: 0,
  agent_exit_code: 0,
  container: 'c0ffee',
  image: 'sha256:' + '0'.repeat(64),
  entrypoint: null,
  removed: true,
};

test('finished and removed: 0; stopped: 1; refused: 2', () => {
  assert.equal(exitCodeOf(base), 0);
  assert.equal(exitCodeOf({ ...base, ended: 'stopped', reason: 'timeout' }), 1);
  assert.equal(exitCodeOf({ ...base, ended: 'refused', reason: 'admission' }), 2);
  assert.equal(exitCodeOf({ ...base, ended: 'refused', reason: 'create_failed', container: null, removed: true }), 2);
});

test('finished but the container is left behind (NOT removed): 1, never 0', () => {
  assert.equal(exitCodeOf({ ...base, removed: false }), 1);
  assert.equal(exitCodeOf({ ...base, ended: 'stopped', removed: false }), 1);
});
