// The Rekor client against the in-repo Rekor-compatible log: entries signed Ed25519ph by the gate
// key, a tree that grows, real SETs and checkpoints, all verified with the code that verifies the
// public fixtures; a misbehaving log is refused with precise codes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { submitToRekor, hashedRekordFor } from '../../src/ledger/anchors/rekor/client.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import type { AnchorErrorCode } from '../../src/ledger/anchors/errors.js';
import { startFakeRekor, fakeRoot, type FakeRekor } from '../helpers/fake-rekor.js';
import { CLI } from '../helpers/public-log.js';
import { anchorCode } from '../helpers/anchor-code.js';

let log: FakeRekor;
const gate = generateKeyPairSync('ed25519');
before(async () => {
  log = await startFakeRekor();
});
after(() => log.close());


test('entries verify as the tree grows; earlier entries keep verifying against their checkpoints', async () => {
  log.misbehave = 'none';
  const start = log.size;
  const got = [];
  for (let i = 0; i < 6; i++) {
    const root = fakeRoot(`grow-${i}`);
    const r = await submitToRekor(log.url, root, gate.privateKey, { rekorKey: log.publicKeyPem });
    assert.equal(r.summary!.treeSize, start + i + 1);
    assert.equal(r.summary!.bodySignature, 'verified');
    got.push({ entry: r.entry, root });
  }
  for (const { entry, root } of got) {
    const s = verifyRekorEntry(entry, log.publicKeyPem, { signer: gate.publicKey, digest: { algorithm: 'sha256', value: root } });
    assert.equal(s.digestMatched, 'artifact');
    assert.equal(s.kind, 'hashedrekord');
    assert.equal(s.logID, log.logID);
    // Another root is refused; so is another gate key.
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(entry, log.publicKeyPem, { digest: { algorithm: 'sha256', value: fakeRoot('other') } }))), 'body_mismatch');
    const otherGate = generateKeyPairSync('ed25519').publicKey;
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(entry, log.publicKeyPem, { signer: otherGate }))), 'body_signature_invalid');
  }
});

test('the stored entry is in the fixture file format and verifies through the binary', async () => {
  log.misbehave = 'none';
  const root = fakeRoot('cli');
  const r = await submitToRekor(log.url, root, gate.privateKey, { rekorKey: log.publicKeyPem });
  assert.deepEqual(Object.keys(r.entry).sort(), ['canonicalizedBody', 'inclusionProof', 'integratedTime', 'logID', 'logIndex', 'signedEntryTimestamp']);
  const dir = mkdtempSync(join(tmpdir(), 'cp-rekor-'));
  writeFileSync(join(dir, 'entry.json'), JSON.stringify(r.entry));
  writeFileSync(join(dir, 'rekor.pem'), log.publicKeyPem);
  writeFileSync(join(dir, 'gate.pub'), createPublicKey(gate.privateKey).export({ type: 'spki', format: 'pem' }));
  const run = (...extra: string[]) =>
    spawnSync(process.execPath, [CLI, 'anchor', 'verify', '--rekor-entry', join(dir, 'entry.json'), '--rekor-key', join(dir, 'rekor.pem'), ...extra], { encoding: 'utf8' });
  const ok = run('--digest', `sha256:${root.toString('hex')}`, '--public-key', join(dir, 'gate.pub'));
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /body signature \(Ed25519ph\)/);
  const bad = run('--digest', `sha256:${fakeRoot('x').toString('hex')}`);
  assert.equal(bad.status, 1);
  assert.match(bad.stdout, /body_mismatch/);
});

test('a bad SET, a truncated inclusion proof, a checkpoint signed by another key fail precisely', async () => {
  const cases: [FakeRekor['misbehave'], AnchorErrorCode][] = [
    ['bad-set', 'set_invalid'],
    ['truncated-proof', 'inclusion_invalid'],
    ['wrong-checkpoint-key', 'checkpoint_invalid'],
    ['http-500', 'unavailable'],
  ];
  for (const [mode, expected] of cases) {
    log.misbehave = mode;
    assert.equal(await anchorCode(submitToRekor(log.url, fakeRoot(`bad-${mode}`), gate.privateKey, { rekorKey: log.publicKeyPem })), expected, mode);
  }
  log.misbehave = 'none';
});

test('an answer without a proof is completed by fetching the entry; a duplicate returns the stored entry', async () => {
  log.misbehave = 'omit-proof';
  const root = fakeRoot('omit');
  const r = await submitToRekor(log.url, root, gate.privateKey, { rekorKey: log.publicKeyPem });
  assert.equal(r.summary!.bodySignature, 'verified');
  log.misbehave = 'none';
  const again = await submitToRekor(log.url, root, gate.privateKey, { rekorKey: log.publicKeyPem });
  assert.equal(again.entry.logIndex, r.entry.logIndex);
  assert.ok(again.entry.inclusionProof.treeSize >= r.entry.inclusionProof.treeSize);
});

test('the log refuses what Rekor refuses: a pure Ed25519 signature, a sha256 digest for an Ed25519 key', async () => {
  const root = fakeRoot('refused');
  const p = hashedRekordFor(root, gate.privateKey);
  const post = (body: unknown) => fetch(`${log.url}/api/v1/log/entries`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const { sign } = await import('node:crypto');
  const pure = structuredClone(p);
  pure.spec.signature.content = sign(null, root, gate.privateKey).toString('base64');
  assert.equal((await post(pure)).status, 400);
  const sha256 = structuredClone(p) as any;
  sha256.spec.data.hash = { algorithm: 'sha256', value: createHash('sha256').update(root).digest('hex') };
  assert.equal((await post(sha256)).status, 400);
  assert.equal((await post(p)).status, 201);
});

test('an unreachable log is unavailable, not a crash', async () => {
  assert.equal(await anchorCode(submitToRekor('http://127.0.0.1:9', fakeRoot('x'), gate.privateKey, { timeoutMs: 2000 })), 'unavailable');
});
