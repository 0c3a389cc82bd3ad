// Sealing a group's entries as one run (ADR 042): the signing thread and the token's
// asynchronous signature give exactly the entries inline signing gives; a group commits only
// with every entry of its jobs signed and inserted; whatever goes wrong while sealing (the
// signing thread dies, signing never finishes, a job that read the ledger fails) fails the
// whole group, and the chain stays whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../src/ledger/ledger.js';
import { entryHash, signEntry, verifyEntrySignature, GENESIS_PREV, type EntryBody, type EntryFields } from '../../src/ledger/entry.js';
import { canonicalize } from '../../src/core/canonical.js';
import { SIGNING_THREAD } from '../../src/home/open.js';
import { chainSealer, sealRun, withSig, type ChainSealer } from '../../src/ledger/seal.js';
import { FileSigner } from '../../src/keys/file.js';
import { Pkcs11Signer } from '../../src/keys/pkcs11.js';
import { parsePkcs11Uri } from '../../src/keys/uri.js';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';
import type { GateKey } from '../../src/ledger/keys.js';
import type { LedgerPort } from '../../src/store/ports.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';
import { ledgerDb, tempDir } from '../store/helpers.js';
import { sealAll } from '../helpers/seal.js';

function fileKey(): FileSigner {
  const { privateKey } = generateKeyPairSync('ed25519');
  return new FileSigner(createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' })));
}

const D = `sha256:${'cd'.repeat(32)}`;

/** A decision entry numbered `n` (the number tells the entries apart). */
function dec(n: number): EntryFields {
  return { kind: 'decision', outcome: 'allow', fingerprint: D, manifest_digest: D, policy_digest: D, n } as EntryFields;
}

function bodies(n: number, from = 0): EntryBody[] {
  return Array.from({ length: n }, (_, i) => ({
    v: 1,
    seq: from + i,
    ts: new Date(Date.UTC(2026, 10, 30, 0, 0, i)).toISOString(),
    prev: '',
    kind: 'decision',
    outcome: i % 3 ? 'allow' : 'refuse',
    fingerprint: D,
    // Text that canonical JSON must escape and order: the run's bytes must not depend on where it is signed.
    note: `é\u2028"${i}"\\ ${'x'.repeat(i % 7)}`,
    nested: { z: i, a: [1, 'two', null, true], 'é': { b: 2, a: 1 } },
  }));
}

/** The chain as stored must be contiguous, linked, and signed by `key`. */
function assertChain(port: LedgerPort, key: GateKey, n: number): void {
  const entries = [...readEntries(port)];
  assert.deepEqual(
    entries.map((e) => e.seq),
    [...Array(n).keys()],
  );
  let prev = GENESIS_PREV;
  for (const e of entries) {
    assert.equal(e.prev, prev, `entry ${e.seq} links to the one before it`);
    assert.ok(verifyEntrySignature(e, key.publicKey), `entry ${e.seq} is signed by the gate key`);
    prev = entryHash(e);
  }
}

/** Counts what each run a sealer was given held: the test must see runs go off the main thread. */
function counting(sealer: ChainSealer): ChainSealer & { runs: number[] } {
  const runs: number[] = [];
  return {
    runs,
    inlineBelow: sealer.inlineBelow,
    start: (prev) => {
      const run = sealer.start(prev);
      const i = runs.push(0) - 1;
      return {
        push: (b) => (runs[i]++, run.push(b)),
        cut: (n) => ((runs[i] = Math.min(runs[i], n)), run.cut(n)),
        end: () => run.end(),
        abandon: () => run.abandon(),
      };
    },
    close: () => sealer.close(),
  };
}

test('a run sealed in the signing thread is byte for byte the run signed inline, and the entries signEntry makes', async () => {
  const key = fileKey();
  const sealer = chainSealer(key, { thread: SIGNING_THREAD })!;
  try {
    const run = bodies(40);
    const inline = sealRun(GENESIS_PREV, run, (m) => key.sign(m));
    const threaded = await sealAll(sealer, GENESIS_PREV, run);
    assert.deepEqual(threaded, inline);
    // The way entries were made before runs existed: one signEntry, one canonical form, one hash.
    let prev = GENESIS_PREV;
    run.forEach((body, i) => {
      const e = signEntry({ ...body, prev }, key);
      assert.equal(inline[i].stored, canonicalize(e));
      assert.equal(inline[i].hash, entryHash(e));
      prev = inline[i].hash;
    });
  } finally {
    sealer.close();
  }
});

test('bodies sent to the thread in batches: cuts before and after a batch left give the run sealed inline without the cut bodies', async () => {
  const key = fileKey();
  for (const pushBatch of [1, 3, 8]) {
    const sealer = chainSealer(key, { thread: SIGNING_THREAD, pushBatch })!;
    try {
      const all = bodies(30);
      // Pushes with cuts (a job rolled back) at every distance from the last batch sent.
      const script: ({ push: number } | { cut: number })[] = [];
      let kept: EntryBody[] = [];
      let next = 0;
      const push = (k: number) => {
        for (let j = 0; j < k && next < all.length; j++) {
          script.push({ push: next });
          kept.push(all[next++]);
        }
      };
      const cut = (back: number) => {
        const n = Math.max(0, kept.length - back);
        script.push({ cut: n });
        kept = kept.slice(0, n);
      };
      push(2), cut(1), push(5), cut(4), push(1), cut(0), push(9), cut(7), push(4), cut(2), push(20);
      const run = sealer.start(GENESIS_PREV);
      for (const step of script) if ('push' in step) run.push(all[step.push]);
      else run.cut(step.cut);
      const threaded = await run.end();
      // The same bodies sealed inline in the order they were kept (each links to the one before).
      assert.deepEqual(threaded, sealRun(GENESIS_PREV, kept, (m) => key.sign(m)), `batches of ${pushBatch}`);
    } finally {
      sealer.close();
    }
  }
});

test('concurrent jobs with the ledger enlisted: every committed job has its signed entry, every failed job none, one chain', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const key = fileKey();
  const sealer = counting(chainSealer(key, { thread: SIGNING_THREAD, inlineBelow: 2 })!);
  const ledger = new Ledger(port, key);
  const commit = new GroupCommit(db);
  commit.enlist(ledger.participant(sealer));
  try {
    const jobs = [];
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 50; i++) {
        const n = round * 50 + i;
        jobs.push(
          commit.run(() => {
            const e = ledger.appendInTx(dec(n));
            if (n % 7 === 3) ledger.appendInTx({ ...dec(n), outcome: 'refuse', extra: true } as EntryFields); // two entries from one job
            if (n % 11 === 5) throw new Error('a check failed after appending');
            return e;
          }),
        );
      }
      await new Promise((r) => setImmediate(r)); // the next round arrives while this one is sealed
    }
    const results = await Promise.allSettled(jobs);
    const ok = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<Record<string, unknown>>).value);
    assert.equal(results.filter((r) => r.status === 'rejected').length, [...Array(300).keys()].filter((n) => n % 11 === 5).length);
    const stored = new Map([...readEntries(port)].map((e) => [e.seq, e]));
    for (const e of ok) {
      // The entry a caller got back is, once its group committed, exactly the stored one.
      assert.deepEqual(stored.get(e.seq as number), e);
      assert.notEqual(Number(e.n) % 11, 5);
    }
    const ns = [...stored.values()].filter((e) => e.extra !== true).map((e) => Number(e.n));
    assert.ok(!ns.some((n) => n % 11 === 5), 'a failed job left no entry');
    assert.equal(ns.length, ok.length);
    assertChain(port, key, stored.size);
    assert.ok(sealer.runs.some((n) => n >= 2), 'some runs were sealed in the signing thread');
  } finally {
    sealer.close();
  }
});

test('the signing thread dying mid-run fails its whole group, durably nothing; the next group seals', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const key = fileKey();
  const real = chainSealer(key, { thread: SIGNING_THREAD, inlineBelow: 2 })!;
  let kill = true;
  // The thread is killed while the run is being pushed to it (the real thread, really killed).
  const sealer: ChainSealer = {
    ...real,
    inlineBelow: 2,
    start: (prev) => {
      const run = real.start(prev);
      if (kill) void (real as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
      kill = false;
      return run;
    },
    close: () => real.close(),
  };
  const ledger = new Ledger(port, key);
  const commit = new GroupCommit(db);
  commit.enlist(ledger.participant(sealer));
  try {
    await commit.run(() => ledger.appendInTx(dec(0))); // one entry: inline
    const first = await Promise.allSettled([1, 2, 3].map((n) => commit.run(() => ledger.appendInTx(dec(n)))));
    assert.deepEqual(first.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    assert.equal([...readEntries(port)].length, 1, 'nothing of the failed group was committed');
    const second = await Promise.all([4, 5, 6].map((n) => commit.run(() => ledger.appendInTx(dec(n)))));
    assert.deepEqual(second.map((e) => e.seq), [1, 2, 3], 'the chain continues where the last committed entry ended');
    assertChain(port, key, 4);
  } finally {
    sealer.close();
  }
});

test('signing that never finishes fails its group at the deadline instead of holding every call', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const key = fileKey();
  const never = () => new Promise<never>(() => undefined);
  const stuck: ChainSealer = { inlineBelow: 2, start: () => ({ push: () => undefined, cut: () => undefined, end: never, abandon: () => undefined }), close: () => undefined };
  const ledger = new Ledger(port, key);
  const commit = new GroupCommit(db);
  commit.enlist(ledger.participant(stuck, 200));
  const r = await Promise.allSettled([1, 2].map((n) => commit.run(() => ledger.appendInTx(dec(n)))));
  assert.deepEqual(r.map((x) => x.status), ['rejected', 'rejected']);
  assert.match(String((r[0] as PromiseRejectedResult).reason), /not signed within/);
  assert.equal([...readEntries(port)].length, 0);
  // The gate goes on: a single entry is signed inline.
  await commit.run(() => ledger.appendInTx(dec(3)));
  assertChain(port, key, 1);
});

test('a job that reads the ledger inside a group and then fails takes the group with it (its rows held earlier jobs entries)', async () => {
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const key = fileKey();
  const ledger = new Ledger(port, key);
  const commit = new GroupCommit(db);
  commit.enlist(ledger.participant(chainSealer(key, { thread: SIGNING_THREAD, inlineBelow: 2 })));
  const r = await Promise.allSettled([
    commit.run(() => ledger.appendInTx(dec(1))),
    commit.run(() => {
      ledger.head(); // a reader inside the group: the held entry is written now, in this job's savepoint
      throw new Error('then this job fails');
    }),
    commit.run(() => ledger.appendInTx(dec(2))),
  ]);
  assert.deepEqual(r.map((x) => x.status), ['rejected', 'rejected', 'rejected'], 'no job reports an entry that its rolled-back savepoint took');
  assert.equal([...readEntries(port)].length, 0);
  // A reader that does not fail sees the group's earlier entries, and the group commits.
  const ok = await Promise.all([
    commit.run(() => ledger.appendInTx(dec(3))),
    commit.run(() => ledger.head()!.seq),
    commit.run(() => ledger.appendInTx(dec(4))),
  ]);
  assert.equal(ok[1], 0);
  assertChain(port, key, 2);
  // A reader after the signing thread was given entries: it takes them back, seals them inline,
  // and the entries after it start a new run on the thread.
  const more = await Promise.all([
    ...[5, 6, 7].map((n) => commit.run(() => ledger.appendInTx(dec(n)).seq)),
    commit.run(() => ledger.head()!.seq),
    ...[8, 9, 10].map((n) => commit.run(() => ledger.appendInTx(dec(n)).seq)),
  ]);
  assert.deepEqual(more, [2, 3, 4, 4, 5, 6, 7]);
  assertChain(port, key, 8);
});

test('a key in a token seals runs on the signing thread, in a session lent to it: the same chain, verified by the public key', hsmSkip, async () => {
  const t = freshToken();
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const key = Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri()), pin: t.pin, create: true });
  const { db, ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const sealer = counting(chainSealer(key, { thread: SIGNING_THREAD })!);
  const ledger = new Ledger(port, key);
  const commit = new GroupCommit(db);
  commit.enlist(ledger.participant(sealer));
  try {
    await Promise.all(Array.from({ length: 60 }, (_, n) => commit.run(() => ledger.appendInTx(dec(n)))));
    assertChain(port, key, 60);
    assert.ok(sealer.runs.length > 0 && sealer.runs.every((n) => n >= 1));
    // The token goes away: the group fails whole; when it returns, signing resumes on the same chain.
    t.remove();
    const gone = await Promise.allSettled([1, 2].map((n) => commit.run(() => ledger.appendInTx(dec(n)))));
    assert.deepEqual(gone.map((x) => x.status), ['rejected', 'rejected']);
    t.restore();
    await Promise.all([3, 4].map((n) => commit.run(() => ledger.appendInTx(dec(n)))));
    assertChain(port, key, 62);
  } finally {
    key.close();
  }
});

test('the stored entry is the canonical form of body, prev and sig, whatever keys sort around sig', () => {
  // Keys just before and after "sig" in UTF-16 order, keys outside the BMP, nesting, undefined.
  const keys = ['a', 'sh', 'si', 'sia', 'sif', 'sig0', 'sigz', 'sih', 'sj', 't', 'tool', 'ts', 'v', 'z', 'é', '\u{1F600}', 'ﬀ', 'S', 'sIg', ''];
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const value = (depth: number): unknown => {
    const r = rnd();
    if (r < 0.3) return `t${Math.floor(rnd() * 100)}"\\\u2028`;
    if (r < 0.5) return Math.floor(rnd() * 1e6) - 5e5;
    if (r < 0.6) return null;
    if (r < 0.7 || depth > 2) return rnd() < 0.5;
    if (r < 0.85) return [value(depth + 1), value(depth + 1)];
    return { sig: 'nested', [keys[Math.floor(rnd() * keys.length)]]: value(depth + 1) };
  };
  for (let i = 0; i < 2000; i++) {
    const body: Record<string, unknown> = { v: 1, seq: i, kind: 'decision', prev: D };
    for (const k of keys) if (rnd() < 0.4) body[k] = rnd() < 0.05 ? undefined : value(0);
    const signed = canonicalize(body);
    const sig = Buffer.from(String(i)).toString('base64');
    assert.equal(withSig(signed, body, sig), canonicalize({ ...body, sig }), `body ${i}`);
  }
});
