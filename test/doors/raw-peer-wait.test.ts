// The raw host's wait for a line (test/helpers/raw-gate.ts): a wait that gave up must not
// swallow the line that comes after it. A waiter left queued took that line, so every later
// wait read one line behind and a slow answer became 'no line from the gate' for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RawPeer } from '../helpers/raw-gate.js';

test('a line that comes after a wait gave up is the next wait\'s', { timeout: 60_000 }, async () => {
  // Answers each line it reads with one line of its own, so nothing comes until it is sent to.
  const peer = new RawPeer([process.execPath, '-e', "require('readline').createInterface({ input: process.stdin }).on('line', (l) => console.log(JSON.stringify({ got: l })))"]);
  await assert.rejects(peer.nextLine(50), /no line from the gate/);
  peer.send('first\n');
  assert.deepEqual(await peer.next(30_000), { got: 'first' });
  await peer.end();
});
