// Anchors through verify: epochs anchored by a real RFC 3161 TSA (openssl) and the in-repo
// Rekor-compatible log verify offline and cover the ledger up to their epoch; each broken anchor
// fails with the anchor's own code; --require-anchors fails on an unanchored tail and passes once
// anchored; a failed anchor is an anchor_failure entry and the next round retries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Anchoring, type AnchorTargets } from '../../src/ledger/anchoring.js';
import { sealEpochInTx, rootBytes } from '../../src/ledger/epoch.js';
import { storeAnchor } from '../../src/ledger/epoch-anchors.js';
import { readEntries } from '../../src/ledger/ledger.js';
import { requestTimestamp } from '../../src/ledger/anchors/tsa/client.js';
import { submitToRekor } from '../../src/ledger/anchors/rekor/client.js';
import { verifyLedger, type VerifyReport } from '../../src/ledger/verify/index.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { startFakeRekor, fakeRoot, type FakeRekor } from '../helpers/fake-rekor.js';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { fixture, type Fixture } from './epoch-fixture.js';

let tsa: TestTsa;
let rogueTsa: TestTsa;
let rekor: FakeRekor;
before(async () => {
  [tsa, rogueTsa, rekor] = await Promise.all([startOpensslTsa('Anchor TSA', { signers: { 'no-eku': null } }), startOpensslTsa('Rogue TSA'), startFakeRekor()]);
  // A log with history, so inclusion proofs have hashes to truncate.
  const filler = generateKeyPairSync('ed25519').privateKey;
  for (let i = 0; i < 5; i++) await submitToRekor(rekor.url, fakeRoot(`filler-${i}`), filler);
});
after(async () => {
  await Promise.all([tsa?.close(), rogueTsa?.close(), rekor?.close()]);
});

const targets = (): AnchorTargets => ({ tsa: { url: tsa.url, chainPem: tsa.chainPem }, rekor: { url: rekor.url, keyPem: rekor.publicKeyPem } });

function anchoring(f: Fixture, t: AnchorTargets = targets()) {
  return new Anchoring({ anchors: f.anchors, ledger: f.ledger, key: f.key, transact: async (fn) => f.db.transaction(fn).immediate(), targets: t });
}

const full = (f: Fixture, extra: Parameters<typeof verifyLedger>[1] = {}) =>
  verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, tsaRoot: tsa.chainPem, rekorKey: rekor.publicKeyPem, workers: 0, ...extra });

function failedAnchor(r: VerifyReport, anchor: string, anchorCode: string, seq: number) {
  assert.equal(r.ok, false);
  assert.deepEqual(
    { code: r.failure?.code, anchor: r.failure?.anchor, anchorCode: r.failure?.anchorCode, seq: r.failure?.seq },
    { code: 'anchor_invalid', anchor, anchorCode, seq },
    r.failure?.detail,
  );
}

/** 0..7 entries, epoch 8 anchored both ways. */
async function anchored(): Promise<Fixture> {
  const f = fixture();
  f.add(8);
  const r = await anchoring(f).tick();
  assert.deepEqual(r.outcomes.map((o) => o.ok), [true, true], JSON.stringify(r.outcomes));
  assert.equal(r.epoch?.seq, 8);
  return f;
}

test('anchored epochs verify offline; --require-anchors fails on the tail and passes once anchored', async () => {
  const f = await anchored();
  const r = await full(f, { requireAnchors: true });
  assert.equal(r.failure, null);
  assert.deepEqual(r.anchors, { rfc3161: { verified: 1, unchecked: 0 }, rekor: { verified: 1, unchecked: 0 } });
  assert.equal(r.anchoredThrough, 8);
  assert.equal(r.unanchored, null);
  assert.equal(r.anchorLag?.epoch, 8);
  assert.ok(r.anchorLag.anchoredAt >= r.anchorLag.lastTs.slice(0, 19), JSON.stringify(r.anchorLag));
  f.add(4);
  const tail = await full(f, { requireAnchors: true });
  assert.equal(tail.failure?.code, 'unanchored');
  assert.equal(tail.failure?.seq, 9);
  assert.equal((await full(f)).ok, true, 'without --require-anchors an unanchored tail is not tampering');
  // One TSA-only verifier does not need the Rekor entry, and vice versa.
  await anchoring(f).tick();
  const again = await full(f, { requireAnchors: true });
  assert.equal(again.failure, null);
  assert.equal(again.anchoredThrough, 13);
  // The CLI and an export agree.
  const home = join(f.path, '..');
  const files = tempDir();
  writeFileSync(join(files, 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  writeFileSync(join(files, 'tsa.pem'), tsa.chainPem);
  writeFileSync(join(files, 'rekor.pem'), rekor.publicKeyPem);
  const out = join(files, 'export.jsonl');
  writeFileSync(join(home, 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  const ex = cloakpipe(['ledger', 'export', '--home', home, '--out', out]);
  assert.equal(ex.status, 0, ex.stderr);
  assert.match(ex.stdout, /exported 14 entries and 4 anchors/);
  const v = cloakpipe(['verify', '--ledger', out, '--public-key', join(files, 'gate.pub'), '--tsa-root', join(files, 'tsa.pem'), '--rekor-key', join(files, 'rekor.pem'), '--require-anchors'], { timeout: 120_000 });
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /rfc3161 2 verified; rekor 2 verified/);
  assert.match(v.stdout, /anchored\s+through seq 13 \(rfc3161 \+ rekor\)/);
  assert.match(v.stdout, /anchor lag\s+at most \d+(s|m \d+s) \(epoch seq (8|13): last entry \S+Z, anchored \S+Z\)/);
});

test('entries dated a month before their anchors verify, and the anchor lag says how long', async () => {
  // What a key holder who rewrote a month of history and anchored it anew would hold: every
  // anchor valid, its time after the entries, the distance the only sign.
  const month = 30 * 86_400_000;
  const f = fixture({ start: Date.now() - month });
  f.add(5);
  await anchoring(f).tick();
  const r = await full(f, { requireAnchors: true });
  assert.equal(r.failure, null);
  assert.equal(r.anchorLag?.epoch, 5);
  assert.ok(r.anchorLag.ms >= month - 60_000, JSON.stringify(r.anchorLag));
  const files = tempDir();
  writeFileSync(join(files, 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  writeFileSync(join(files, 'tsa.pem'), tsa.chainPem);
  const v = cloakpipe(['verify', '--home', join(f.path, '..'), '--public-key', join(files, 'gate.pub'), '--tsa-root', join(files, 'tsa.pem')], { timeout: 120_000 });
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /anchor lag\s+at most (29d 23h|30d 0h) \(epoch seq 5: /);
  const j = cloakpipe(['verify', '--home', join(f.path, '..'), '--public-key', join(files, 'gate.pub'), '--tsa-root', join(files, 'tsa.pem'), '--json'], { timeout: 120_000 });
  assert.equal(JSON.parse(j.stdout).anchorLag.epoch, 5);
});

test('a token for another root fails imprint_mismatch', async () => {
  const f = await anchored();
  const other = await requestTimestamp(tsa.url, { algorithm: 'sha256', value: fakeRoot('another root') });
  storeAnchor(f.anchors, { epoch: 8, kind: 'rfc3161', token: other.token.toString('base64') });
  failedAnchor(await full(f), 'rfc3161', 'imprint_mismatch', 8);
});

test('a token from an untrusted TSA fails its chain', async () => {
  const f = await anchored();
  const epoch = [...readEntries(f.ledger.port, 8, 1)][0];
  const rogue = await requestTimestamp(rogueTsa.url, { algorithm: 'sha256', value: rootBytes(String(epoch.root)) });
  storeAnchor(f.anchors, { epoch: 8, kind: 'rfc3161', token: rogue.token.toString('base64') });
  failedAnchor(await full(f), 'rfc3161', 'tsa_chain_invalid', 8);
});

test('a token signed under the trusted root by a certificate without the timeStamping EKU fails tsa_eku_missing', async () => {
  const f = await anchored();
  const epoch = [...readEntries(f.ledger.port, 8, 1)][0];
  tsa.signer = 'no-eku';
  let token: Buffer;
  try {
    token = (await requestTimestamp(tsa.url, { algorithm: 'sha256', value: rootBytes(String(epoch.root)) })).token;
  } finally {
    tsa.signer = undefined;
  }
  storeAnchor(f.anchors, { epoch: 8, kind: 'rfc3161', token: token.toString('base64') });
  failedAnchor(await full(f), 'rfc3161', 'tsa_eku_missing', 8);
});

test('entries dated after their timestamp fail gentime_before', async () => {
  // A ledger whose entries claim a time an hour after the TSA's genTime.
  const f = fixture({ start: Date.now() + 3_600_000 });
  f.add(3);
  // The gate does not store such a token (anchor-time.test.ts); one stored by hand fails verify.
  const r = await anchoring(f, { tsa: { url: tsa.url, chainPem: tsa.chainPem } }).tick();
  assert.deepEqual(r.outcomes, [{ kind: 'rfc3161', ok: false, reason: 'gentime_before' }]);
  const token = (await requestTimestamp(tsa.url, { algorithm: 'sha256', value: rootBytes(String(r.epoch!.root)) })).token;
  storeAnchor(f.anchors, { epoch: r.epoch!.seq, kind: 'rfc3161', token: token.toString('base64') });
  const v = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, tsaRoot: tsa.chainPem, workers: 0 });
  failedAnchor(v, 'rfc3161', 'gentime_before', 3);
});

for (const [misbehave, code] of [
  ['bad-set', 'set_invalid'],
  ['truncated-proof', 'inclusion_invalid'],
  ['wrong-checkpoint-key', 'checkpoint_invalid'],
] as const) {
  test(`a Rekor entry from a log that misbehaves (${misbehave}) fails ${code}`, async () => {
    const f = fixture();
    f.add(4);
    const epoch = sealEpochInTx(f.ledger)!;
    rekor.misbehave = misbehave;
    try {
      // Submitted without the log key, so the client stores what the log said.
      const got = await submitToRekor(rekor.url, rootBytes(epoch.root), f.key.privateKey);
      storeAnchor(f.anchors, { epoch: epoch.seq, kind: 'rekor', entry: got.entry });
    } finally {
      rekor.misbehave = 'none';
    }
    failedAnchor(await full(f), 'rekor', code, epoch.seq);
    // The gate's own client refuses such an answer: recorded as an anchor failure, not stored.
    const g = fixture();
    g.add(2);
    rekor.misbehave = misbehave;
    try {
      const r = await anchoring(g, { rekor: { url: rekor.url, keyPem: rekor.publicKeyPem } }).tick();
      assert.deepEqual(r.outcomes, [{ kind: 'rekor', ok: false, reason: code }]);
    } finally {
      rekor.misbehave = 'none';
    }
  });
}

test('a Rekor entry for another root or signed by another key fails the body', async () => {
  const f = await anchored();
  const other = await submitToRekor(rekor.url, fakeRoot('not this epoch'), f.key.privateKey);
  storeAnchor(f.anchors, { epoch: 8, kind: 'rekor', entry: other.entry });
  failedAnchor(await full(f), 'rekor', 'body_mismatch', 8);
  const epoch = [...readEntries(f.ledger.port, 8, 1)][0];
  const forged = await submitToRekor(rekor.url, rootBytes(String(epoch.root)), generateKeyPairSync('ed25519').privateKey);
  storeAnchor(f.anchors, { epoch: 8, kind: 'rekor', entry: forged.entry });
  failedAnchor(await full(f), 'rekor', 'body_signature_invalid', 8);
});

test('an anchor that cannot be obtained is an anchor_failure entry; the next round retries and covers it', async () => {
  const f = fixture();
  f.add(3);
  const down = await startOpensslTsa('Down TSA');
  const downTargets = { tsa: { url: down.url, chainPem: down.chainPem } };
  await down.close();
  const a = anchoring(f, downTargets);
  const r = await a.tick();
  assert.deepEqual(r.outcomes, [{ kind: 'rfc3161', ok: false, reason: 'unavailable' }]);
  const failures = [...readEntries(f.ledger.port)].filter((e) => e.kind === 'anchor_failure');
  assert.deepEqual(failures.map((e) => [e.epoch, e.anchor, e.reason]), [[3, 'rfc3161', 'unavailable']]);
  // Another failing round retries the same epoch without piling up epochs or failure entries.
  await a.tick();
  assert.equal([...readEntries(f.ledger.port)].length, 5);
  const plain = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, workers: 0 });
  assert.equal(plain.ok, true);
  const req = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, tsaRoot: down.chainPem, requireAnchors: true, workers: 0 });
  assert.equal(req.failure?.code, 'unanchored');
  assert.equal(req.failure?.seq, 0);
  // The TSA is back: the epoch is anchored, then the failure entry is sealed and anchored too.
  const back = anchoring(f, { tsa: { url: tsa.url, chainPem: tsa.chainPem } });
  const ok = await back.tick();
  assert.ok(ok.outcomes.every((o) => o.ok));
  const after = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, tsaRoot: tsa.chainPem, requireAnchors: true, workers: 0 });
  assert.equal(after.failure, null);
  assert.equal(after.anchors.rfc3161.verified, 2);
});
