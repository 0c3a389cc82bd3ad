// The ledger's chain as written: contiguous seq, prev links, signatures by the gate key,
// time that never goes backwards; two connections (two gates on one home) share one chain;
// group commit isolates a failing job and makes every job durable before it resolves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../src/ledger/ledger.js';
import { entryHash, verifyEntrySignature, GENESIS_PREV } from '../../src/ledger/entry.js';
import { keyIdOf, type GateKey } from '../../src/ledger/keys.js';
import { openDb } from '../../src/store/sqlite.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import { tempDir } from '../helpers/cli.js';

function key(): GateKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pk = createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const publicKey = createPublicKey(pk);
  return { privateKey: pk, publicKey, keyId: keyIdOf(publicKey) };
}

test('entries chain, sign and keep time monotonic even when the clock steps back', () => {
  const db = openDb(join(tempDir(), 'l.db'), { create: true });
  const k = key();
  let now = Date.parse('2026-01-01T00:00:10Z');
  const ledger = new Ledger(db, k, () => now);
  ledger.append({ kind: 'startup' });
  now -= 5000; // NTP step backwards
  ledger.append({ kind: 'decision', outcome: 'allow' });
  now += 60_000;
  ledger.append({ kind: 'shutdown' });
  const entries = [...readEntries(db)];
  assert.deepEqual(entries.map((e) => e.seq), [0, 1, 2]);
  assert.equal(entries[0].prev, GENESIS_PREV);
  for (let i = 1; i < entries.length; i++) {
    assert.equal(entries[i].prev, entryHash(entries[i - 1]));
    assert.ok(entries[i].ts >= entries[i - 1].ts);
  }
  assert.equal(entries[1].ts, entries[0].ts, 'the stepped-back clock is clamped to the head');
  for (const e of entries) assert.ok(verifyEntrySignature(e, k.publicKey));
  const other = key();
  assert.ok(!verifyEntrySignature(entries[0], other.publicKey));
  const edited = { ...entries[1], outcome: 'refuse' };
  assert.ok(!verifyEntrySignature(edited, k.publicKey));
});

test('two connections on one ledger append to one contiguous chain', () => {
  const path = join(tempDir(), 'l.db');
  const k = key();
  const a = new Ledger(openDb(path, { create: true }), k);
  const b = new Ledger(openDb(path), k);
  for (let i = 0; i < 20; i++) (i % 3 === 0 ? b : a).append({ kind: 'decision', i });
  const entries = [...readEntries(a.db)];
  assert.deepEqual(entries.map((e) => e.seq), [...Array(20).keys()]);
  for (let i = 1; i < entries.length; i++) assert.equal(entries[i].prev, entryHash(entries[i - 1]));
});

test('group commit: jobs in one turn share a transaction; a throwing job rolls back alone', async () => {
  const db = openDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(db, key());
  const commit = new GroupCommit(db);
  const results = await Promise.allSettled([
    commit.run(() => ledger.appendInTx({ kind: 'decision', n: 1 })),
    commit.run(() => {
      ledger.appendInTx({ kind: 'decision', n: 2 });
      throw new Error('check failed after writing');
    }),
    commit.run(() => ledger.appendInTx({ kind: 'decision', n: 3 })),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  const entries = [...readEntries(db)];
  assert.deepEqual(entries.map((e) => [e.seq, e.n]), [[0, 1], [1, 3]], 'the failed job left nothing; the chain has no gap');
});

test('group commit: a failing COMMIT rejects every job of the batch (nothing is reported durable)', async () => {
  const db = openDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(db, key());
  db.exec('CREATE TABLE guard (x INTEGER REFERENCES entries(seq) DEFERRABLE INITIALLY DEFERRED)');
  const commit = new GroupCommit(db);
  const results = await Promise.allSettled([
    commit.run(() => ledger.appendInTx({ kind: 'decision' })),
    commit.run(() => db.prepare('INSERT INTO guard VALUES (999)').run()), // violates at COMMIT
  ]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  assert.equal([...readEntries(db)].length, 0);
});
