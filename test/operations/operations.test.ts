// The operations' pure parts: which reply is a success, and whether an owning gate still runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { THIS_GATE, ownerAlive } from '../../src/operations/operations.js';
import { outcomeOf } from '../../src/core/outcome.js';

test('outcomeOf: a result succeeded; an error, isError or nothing failed', () => {
  assert.equal(outcomeOf({ result: { content: [] } }), 'succeeded');
  assert.equal(outcomeOf({ error: { code: -32000, message: 'boom' } }), 'failed');
  assert.equal(outcomeOf({ result: { content: [], isError: true } }), 'failed');
  assert.equal(outcomeOf({}), 'failed');
});

test('ownerAlive: this process yes, a dead pid or another host no, a running process yes', () => {
  assert.equal(ownerAlive(THIS_GATE), true);
  assert.equal(ownerAlive(null), false);
  assert.equal(ownerAlive('garbage'), false);
  assert.equal(ownerAlive(`other-host-${hostname()}/1/ab`), false);
  assert.equal(ownerAlive(`${hostname()}/999999999/ab`), false);
  assert.equal(ownerAlive(`${hostname()}/${process.ppid}/ab`), true);
  assert.equal(ownerAlive(`${hostname()}/${process.pid}/00`), false, 'an earlier process with our pid');
});
