// SQLite's group commit: jobs queued in one turn share one IMMEDIATE transaction (one fsync);
// a job that throws rolls back alone; a failing COMMIT rejects every job of the batch; a
// database deleted or replaced under the gate rejects every job before it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../../src/ledger/ledger.js';
import { FileSigner } from '../../../src/keys/file.js';
import type { GateKey } from '../../../src/ledger/keys.js';
import { GroupCommit } from '../../../src/store/sqlite/group-commit.js';
import { ledgerDb, tempDir } from '../helpers.js';

function key(): GateKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pk = createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return new FileSigner(pk);
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

test('group commit: each job in a savepoint of its own: one that returns a promise is refused and undone alone, one that rolls back a transaction of its own keeps the rest of its work', async () => {
  const { db } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  db.exec('CREATE TABLE t (x INTEGER)');
  const insert = db.prepare('INSERT INTO t VALUES (?)');
  const commit = new GroupCommit(db);
  const results = await Promise.allSettled([
    commit.run(() => insert.run(1)),
    commit.run(() => {
      insert.run(2);
      return Promise.resolve(); // its effects could not be inside the transaction: refused
    }),
    commit.run(() => {
      try {
        db.transaction(() => {
          insert.run(3);
          throw new Error('a nested step failed');
        })();
      } catch {
        /* the job goes on without it */
      }
      insert.run(4);
    }),
    commit.run(() => {
      insert.run(5);
      throw new Error('a check failed after writing');
    }),
    commit.run(() => insert.run(6)),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
  assert.ok((results[1] as PromiseRejectedResult).reason instanceof TypeError);
  assert.deepEqual((db.prepare('SELECT x FROM t ORDER BY x').all() as { x: number }[]).map((r) => r.x), [1, 4, 6]);
  assert.equal(db.inTransaction, false);
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

test('group commit: deferred work rides in the next batch, ahead of its jobs, and is durable when it resolves', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(port, key());
  // A deferral longer than any test: only the next batch can commit the deferred job.
  const commit = new GroupCommit(db, 256, () => undefined, 600_000);
  let ranLater = false;
  const later = commit.runLater(() => {
    ranLater = true;
    return ledger.appendInTx({ kind: 'result', outcome: 'ok', fingerprint: 'sha256:0', decision: 0, result_digest: 'sha256:1' });
  });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(ranLater, false, 'deferred work waits for a batch');
  assert.equal([...readEntries(port)].length, 0);
  const seenByNext = await commit.run(() => {
    assert.equal(ranLater, true, 'the deferred job ran first, in the same transaction');
    return ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0' }).seq;
  });
  assert.equal((await later).seq, 0);
  assert.equal(seenByNext, 1);
  assert.deepEqual([...readEntries(port)].map((e) => e.kind), ['result', 'decision']);
});

test('group commit: deferred work commits on its own when no batch follows; a throwing deferred job rejects alone', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const ledger = new Ledger(port, key());
  const commit = new GroupCommit(db, 256, () => undefined, 5);
  const results = await Promise.allSettled([
    commit.runLater(() => ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', n: 1 })),
    commit.runLater(() => {
      throw new Error('settlement failed');
    }),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected']);
  assert.deepEqual([...readEntries(port)].map((e) => e.n), [1]);
});
