// Epochs: the RFC 6962 root over the entry hashes since the previous epoch, recorded as a signed
// entry; consecutive epochs tile the ledger; two gates on one home never seal overlapping ranges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger, readEntries } from '../../src/ledger/ledger.js';
import { entryHash } from '../../src/ledger/entry.js';
import { leafHash, rootFromLeafHashes } from '../../src/ledger/merkle.js';
import { sealEpochInTx as sealEpoch, lastEpoch } from '../../src/ledger/epoch.js';
import { ledgerDb } from '../store/helpers.js';
import { verifyLedger } from '../../src/ledger/verify/index.js';
import { fixture } from './epoch-fixture.js';

test('an epoch seals the entries since the last one under their RFC 6962 root', () => {
  const f = fixture();
  assert.equal(sealEpoch(f.ledger), null, 'an empty ledger has nothing to seal');
  f.add(5);
  const e1 = sealEpoch(f.ledger)!;
  assert.equal(e1.kind, 'epoch');
  assert.deepEqual([e1.seq, e1.first, e1.last, e1.size], [5, 0, 4, 5]);
  const hashes = [...readEntries(f.ledger.port, 0, 5)].map((e) => leafHash(Buffer.from(entryHash(e).slice(7), 'hex')));
  assert.equal(e1.root, 'sha256:' + rootFromLeafHashes(hashes).toString('hex'));
  assert.equal(sealEpoch(f.ledger), null, 'nothing new since the epoch');
  f.add(3);
  const e2 = sealEpoch(f.ledger)!;
  // The next epoch starts at the previous epoch entry, so that entry is covered too.
  assert.deepEqual([e2.seq, e2.first, e2.last, e2.size], [9, 5, 8, 4]);
  assert.equal(lastEpoch(f.ledger.port)!.seq, 9);
});

test('two gates on one home seal contiguous, non-overlapping epochs', async () => {
  const f = fixture();
  const { db: db2, ledger: port2 } = ledgerDb(f.path);
  const other = new Ledger(port2, f.key);
  for (let i = 0; i < 6; i++) {
    f.add(2);
    other.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: `sha256:${'ab'.repeat(32)}`, policy_digest: `sha256:${'ab'.repeat(32)}` });
    if (i % 2 === 0) sealEpoch(f.ledger);
    else sealEpoch(other);
  }
  db2.close();
  const r = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, workers: 0 });
  assert.equal(r.failure, null);
  assert.equal(r.epochs, 6);
});
