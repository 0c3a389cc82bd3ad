// Sealing ahead (ADR 045): while the gate waits, the entry the next group will most likely append
// first is sealed. That may save a signature and must never change a byte of the chain: a ledger
// that seals ahead stores exactly what a ledger that never does stores, whatever happens between
// the seal and the group (another entry first, other fields, a rollback, the head moving, a
// group large enough for the signing thread).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../src/ledger/ledger.js';
import { entryHash, verifyEntrySignature, GENESIS_PREV, type EntryFields } from '../../src/ledger/entry.js';
import { SIGNING_THREAD } from '../../src/home/open.js';
import { chainSealer, type ChainSealer } from '../../src/ledger/seal.js';
import { FileSigner } from '../../src/keys/file.js';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';
import type { LedgerPort } from '../../src/store/ports.js';
import type { Signer } from '../../src/core/signer.js';
import { ledgerDb, tempDir } from '../store/helpers.js';

const D = `sha256:${'ab'.repeat(32)}`;

/** The real file key, with its signatures counted (the count is what sealing ahead saves). */
class CountingKey extends FileSigner {
  signed = 0;
  slow = false;
  override sign(message: Uint8Array): Buffer {
    this.signed++;
    return super.sign(message);
  }
  get slowInline(): boolean {
    return this.slow;
  }
}

function pem(): string {
  const { privateKey } = generateKeyPairSync('ed25519');
  return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

function result(n: number): EntryFields {
  return { kind: 'result', outcome: 'ok', fingerprint: D, decision: n, result_digest: D } as EntryFields;
}

function decision(n: number): EntryFields {
  return { kind: 'decision', outcome: 'allow', fingerprint: D, manifest_digest: D, policy_digest: D, n } as EntryFields;
}

/** A ledger in its own database, on a clock that moves 1 ms a reading from a fixed instant. */
function ledgerWith(key: Signer, sealer: ChainSealer | null = null) {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  let t = Date.UTC(2026, 11, 1);
  const ledger = new Ledger(port, key, () => t++);
  const commit = new GroupCommit(db);
  commit.enlist(ledger.participant(sealer));
  return { port, ledger, commit };
}

function rows(port: LedgerPort): string[] {
  return [...port.bodies(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)];
}

function assertChain(port: LedgerPort, key: Signer): void {
  let prev = GENESIS_PREV;
  [...readEntries(port)].forEach((e, i) => {
    assert.equal(e.seq, i);
    assert.equal(e.prev, prev, `entry ${e.seq} links to the one before it`);
    assert.ok(verifyEntrySignature(e, key.publicKey), `entry ${e.seq} is signed by the gate key`);
    prev = entryHash(e);
  });
}

const ts = (ms: number) => new Date(Date.UTC(2026, 11, 1) + ms).toISOString();

test('the last call\'s result sealed while the gate waits: its group signs only the new decision, and stores what sealing it then stores', async () => {
  const key = new CountingKey(createPrivateKey(pem()));
  const twinKey = new FileSigner(key.privateKey);
  const a = ledgerWith(key);
  const b = ledgerWith(twinKey);
  for (const l of [a, b]) await l.commit.run(() => l.ledger.appendInTx(decision(0)));
  a.ledger.preseal(result(0), ts(500));
  const before = key.signed;
  for (const l of [a, b])
    await Promise.all([l.commit.runLater(() => l.ledger.appendInTx(result(0), ts(500))), l.commit.run(() => l.ledger.appendInTx(decision(1)))]);
  assert.equal(key.signed - before, 1, 'the group signed the decision only: the result was sealed ahead');
  assert.deepEqual(rows(a.port), rows(b.port));
  assertChain(a.port, key);
  assert.equal([...readEntries(a.port)][1].ts, ts(500), 'the result entry is dated when the reply came');
});

test('a seal made ahead is used only for its exact bytes: other fields, another time, a moved head or a later group sign anew', async () => {
  const key = new CountingKey(createPrivateKey(pem()));
  const a = ledgerWith(key);
  const b = ledgerWith(new FileSigner(key.privateKey));
  const both = async (f: (l: ReturnType<typeof ledgerWith>) => Promise<unknown>) => {
    for (const l of [a, b]) await f(l);
  };
  const group = (l: ReturnType<typeof ledgerWith>, ...fields: [EntryFields, string?][]) => l.commit.run(() => fields.map(([f, t]) => l.ledger.appendInTx(f, t)));
  await both((l) => group(l, [decision(0)]));
  const cases: [string, () => void, (l: ReturnType<typeof ledgerWith>) => Promise<unknown>][] = [
    // First, while the head's time is the clock's (later ones would clamp the clock to ts(900)).
    ['the clock\'s time', () => a.ledger.preseal(result(4), ts(900)), (l) => group(l, [result(4)])],
    ['other fields', () => a.ledger.preseal(result(1), ts(900)), (l) => group(l, [result(2), ts(900)])],
    ['another time', () => a.ledger.preseal(result(3), ts(900)), (l) => group(l, [result(3), ts(901)])],
    ['another entry first', () => a.ledger.preseal(result(5), ts(900)), (l) => group(l, [decision(5)], [result(5), ts(900)])],
    ['the head moved before the group', () => a.ledger.preseal(result(6), ts(900)), async (l) => (await group(l, [decision(6)]), group(l, [result(6), ts(900)]))],
    ['its job rolled back', () => a.ledger.preseal(result(7), ts(900)), async (l) => {
      await l.commit.run(() => {
        l.ledger.appendInTx(result(7), ts(900));
        throw new Error('a check failed after appending');
      }).catch(() => undefined);
      return group(l, [result(7), ts(900)]);
    }],
  ];
  for (const [name, seal, run] of cases) {
    seal();
    const [signed, stored] = [key.signed, rows(a.port).length];
    await both(run);
    assert.deepEqual(rows(a.port), rows(b.port), name);
    assert.equal(key.signed - signed, rows(a.port).length - stored, `${name}: every entry of the group was signed in it`);
  }
  assertChain(a.port, key);
});

test('no seal ahead inside a group, nor with a key slow to sign on this thread (a token signs on its own thread)', async () => {
  const key = new CountingKey(createPrivateKey(pem()));
  const a = ledgerWith(key);
  await a.commit.run(() => a.ledger.appendInTx(decision(0)));
  let signed = key.signed;
  await a.commit.run(() => {
    a.ledger.preseal(result(0), ts(900)); // the group holds entries: the head is not final
    a.ledger.appendInTx(decision(1));
  });
  assert.equal(key.signed - signed, 1);
  key.slow = true;
  signed = key.signed;
  a.ledger.preseal(result(1), ts(900));
  assert.equal(key.signed, signed, 'nothing signed ahead with a slow key');
  await a.commit.run(() => a.ledger.appendInTx(result(1), ts(900)));
  assert.equal(key.signed - signed, 1);
  assertChain(a.port, key);
});

test('random interleavings of seals ahead, groups inline and in the signing thread, rollbacks and appends outside groups store exactly what no seal ahead stores', async () => {
  let seed = 0x2545f491;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
  const key = new CountingKey(createPrivateKey(pem()));
  const twin = new FileSigner(key.privateKey);
  const sealers = [chainSealer(key, { thread: SIGNING_THREAD, inlineBelow: 3 })!, chainSealer(twin, { thread: SIGNING_THREAD, inlineBelow: 3 })!];
  const a = ledgerWith(key, sealers[0]);
  const b = ledgerWith(twin, sealers[1]);
  let hits = 0;
  try {
    for (const l of [a, b]) await l.commit.run(() => l.ledger.appendInTx(decision(0)));
    for (let step = 1; step < 400; step++) {
      const r = result(rand(4));
      const at = ts(rand(3) === 0 ? 0 : 1000 + step); // sometimes before the head: clamped alike
      const sealAhead = rand(3) !== 0;
      if (sealAhead) a.ledger.preseal(r, at);
      const signed = key.signed;
      const shape = rand(6);
      for (const l of [a, b]) {
        if (shape === 5) {
          l.ledger.appendInTx(r, at); // outside any group (a store that does not enlist)
          continue;
        }
        const jobs: Promise<unknown>[] = [l.commit.runLater(() => l.ledger.appendInTx(r, at))];
        const more = shape === 4 ? 4 : shape; // 4: a group long enough for the signing thread
        for (let i = 0; i < more; i++)
          jobs.push(
            l.commit.run(() => {
              l.ledger.appendInTx(decision(step * 10 + i));
              if (i === 1 && shape === 3) throw new Error('rolled back');
            }),
          );
        await Promise.allSettled(jobs);
      }
      assert.deepEqual(rows(a.port), rows(b.port), `step ${step}`);
      const grown = shape === 5 ? 1 : 1 + (shape === 4 ? 4 : shape) - (shape === 3 ? 1 : 0);
      if (sealAhead && shape !== 4 && key.signed - signed === grown - 1) hits++;
    }
    assertChain(a.port, key);
    assert.ok(hits > 50, `seals made ahead were used (${hits} times)`);
  } finally {
    for (const s of sealers) s.close();
  }
});
