// What the gate keeps of outcomes the store could not take (src/gate/unrecorded.ts): tried again
// until the store takes them, and bounded, so a store down under a stream of large results does
// not hold them all: past the bound the oldest are given up, the newest always kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Unrecorded } from '../../src/gate/unrecorded.js';

/** A transaction that fails while `down`, and runs its function when up. */
function store() {
  const s = { down: true, ran: [] as string[] };
  const commit = async <T>(fn: () => T): Promise<T> => {
    if (s.down) throw new Error('store unavailable');
    return fn();
  };
  return { s, commit };
}

test('a kept outcome is recorded once the store takes it, and only then', async () => {
  const { s, commit } = store();
  const u = new Unrecorded(commit);
  u.record(() => void s.ran.push('a'));
  await new Promise((r) => setImmediate(r));
  await u.retry();
  assert.deepEqual(s.ran, [], 'still down');
  s.down = false;
  await u.retry();
  assert.deepEqual(s.ran, ['a']);
  await u.retry();
  assert.deepEqual(s.ran, ['a'], 'once');
  await u.close();
});

test('kept outcomes are bounded in bytes: the oldest are given up, the newest kept', async () => {
  const { s, commit } = store();
  const u = new Unrecorded(commit);
  const MiB = 1024 * 1024;
  for (let i = 0; i < 10; i++) u.keep(() => void s.ran.push(`r${i}`), 20 * MiB);
  u.keep(() => void s.ran.push('huge'), 100 * MiB);
  s.down = false;
  await u.close();
  assert.deepEqual(s.ran, ['huge'], 'past 64 MiB only the newest stays');
  const v = new Unrecorded(commit);
  s.ran = [];
  s.down = true;
  for (let i = 0; i < 5; i++) v.keep(() => void s.ran.push(`r${i}`), 20 * MiB);
  s.down = false;
  await v.close();
  assert.deepEqual(s.ran, ['r2', 'r3', 'r4'], 'the three newest fit in 64 MiB');
});
