// SQLite's group commit: jobs queued in one turn share one IMMEDIATE transaction (one fsync);
// a job that throws rolls back alone; a failing COMMIT rejects every job of the batch; a
// database deleted or replaced under the gate rejects every job before it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../../src/ledger/ledger.js';
import { keyIdOf, type GateKey } from '../../../src/ledger/keys.js';
import { GroupCommit } from '../../../src/store/sqlite/group-commit.js';
import { ledgerDb, tempDir } from '../helpers.js';

function key(): GateKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pk = createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const publicKey = createPublicKey(pk);
  return { privateKey: pk, publicKey, keyId: keyIdOf(publicKey) };
}

test('group commit: jobs in one turn share a transaction; a throwing job rolls back alone', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(port, key());
  const commit = new GroupCommit(db);
  const results = await Promise.allSettled([
    commit.run(() => ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 1 })),
    commit.run(() => {
      ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 2 });
      throw new Error('check failed after writing');
    }),
    commit.run(() => ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 3 })),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  const entries = [...readEntries(port)];
  assert.deepEqual(entries.map((e) => [e.seq, e.n]), [[0, 1], [1, 3]], 'the failed job left nothing; the chain has no gap');
});

test('group commit: a failing COMMIT rejects every job of the batch (nothing is reported durable)', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(port, key());
  db.exec('CREATE TABLE guard (x INTEGER REFERENCES entries(seq) DEFERRABLE INITIALLY DEFERRED)');
  const commit = new GroupCommit(db);
  const results = await Promise.allSettled([
    commit.run(() => ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0' })),
    commit.run(() => db.prepare('INSERT INTO guard VALUES (999)').run()), // violates at COMMIT
  ]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  assert.equal([...readEntries(port)].length, 0);
});

test('group commit: a failing check before the batch rejects every job and runs none', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(port, key());
  let intact = true;
  const commit = new GroupCommit(db, 256, () => {
    if (!intact) throw new Error('replaced');
  });
  await commit.run(() => ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0' }));
  intact = false;
  let ran = 0;
  const results = await Promise.allSettled([commit.run(() => ran++), commit.run(() => ran++)]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  assert.equal(ran, 0);
  assert.equal([...readEntries(port)].length, 1);
});
