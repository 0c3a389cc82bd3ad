// The operations' pure parts: which reply is a success, and whether an owning gate still runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { THIS_GATE, ownerAlive } from '../../src/operations/operations.js';
import { processStart } from '../../src/operations/owner.js';
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

test('ownerAlive: a running pid is the owner only if it started when the owner did', () => {
  const start = processStart(process.ppid);
  assert.ok(start, 'this host has /proc');
  assert.match(THIS_GATE, new RegExp(`/${process.pid}/${processStart(process.pid)!.replace('.', '\\.')}/[0-9a-f]{12}$`));
  const [boot, ticks] = start.split('.');
  assert.equal(ownerAlive(`${hostname()}/${process.ppid}/${start}/ab`), true);
  assert.equal(ownerAlive(`${hostname()}/${process.ppid}/${boot}.${Number(ticks) + 1}/ab`), false, 'the pid was reused');
  assert.equal(ownerAlive(`${hostname()}/${process.ppid}/${boot.replace(/[0-9a-f]/, (c) => (c === '0' ? '1' : '0'))}.${ticks}/ab`), false, 'another boot');
  assert.equal(ownerAlive(`${hostname()}/${process.ppid}/-/ab`), true, 'no start known: the pid decides');
  assert.equal(ownerAlive(`${hostname()}/999999999/${start}/ab`), false);
});
