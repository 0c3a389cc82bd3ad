// A real Rekor v2 (tlog-tiles) entry of Sigstore's staging log verifies: no signed entry
// timestamp, no integratedTime; the C2SP signed checkpoint is the proof. Every one-bit change to
// anything signed or hashed is refused: the body (the leaf), the log id, the root hash, every
// proof hash, every byte of the checkpoint note and its signature line, and the numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { anchorCodeOf } from '../helpers/anchor-code.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import { numberMutations, survivors, type Mutation } from '../helpers/mutations.js';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, REKOR_V2_ENTRIES, REKOR_V2_KEY, fixturePath, fixtureJson, fixtureText } from '../helpers/public-log.js';

const KEY = createPublicKey(fixtureText(REKOR_V2_KEY));
type Entry = Record<string, any>;

test('the real v2 entry verifies: C2SP key id, inclusion proof, Ed25519 checkpoint; no time claimed', () => {
  const s = verifyRekorEntry(fixtureText(REKOR_V2_ENTRIES[0]), KEY);
  assert.equal(s.logVersion, 2);
  assert.equal(s.kind, 'hashedrekord');
  assert.equal(s.apiVersion, '0.0.2');
  assert.equal(s.logIndex, 645);
  assert.equal(s.treeSize, 646);
  assert.equal(s.integratedTime, null);
  assert.equal(s.checkpointOrigin, 'log2025-alpha1.rekor.sigstage.dev');
  assert.equal(s.logID, 'f30d5a999d92e662484244263f174cb8eacbfe8264bc583d32741799e3825dc9');
  assert.deepEqual(s.recordedDigests, ['sha256:' + Buffer.from('FfZyRhFZIbt8HeDn6eknXIAW3CVKDACYiJRLftNkSqo=', 'base64').toString('hex')]);
  // --digest: the recorded digest matches, another is body_mismatch.
  assert.equal(verifyRekorEntry(fixtureJson(REKOR_V2_ENTRIES[0]), KEY, { digest: s.recordedDigests[0] }).digestMatched, 'recorded');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(fixtureJson(REKOR_V2_ENTRIES[0]), KEY, { digest: 'sha256:' + '00'.repeat(32) })), 'body_mismatch');
});

test('another key, a v1 key, a v2 entry passed off as v1 (or back) are refused', () => {
  const e = fixtureJson(REKOR_V2_ENTRIES[0]);
  const other = generateKeyPairSync('ed25519').publicKey;
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e, other)), 'log_id_mismatch');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e, fixtureText('rekor-public.pem'))), 'log_id_mismatch');
  // The other key under the right id: the checkpoint signature cannot verify.
  const forged = fixtureJson(REKOR_V2_ENTRIES[0]);
  const raw = other.export({ type: 'spki', format: 'der' }).subarray(-32);
  forged.logID = createHash('sha256').update(Buffer.concat([Buffer.from('log2025-alpha1.rekor.sigstage.dev\n'), Buffer.from([1]), raw])).digest('hex');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(forged, other)), 'checkpoint_invalid');
  // A number for integratedTime, or a SET field, makes it a v1 entry: it then lacks a valid SET.
  const v1ish = fixtureJson(REKOR_V2_ENTRIES[0]);
  v1ish.integratedTime = 1749470255;
  assert.equal(anchorCodeOf(() => verifyRekorEntry(v1ish, KEY)), 'malformed');
  const withSet = fixtureJson(REKOR_V2_ENTRIES[0]);
  withSet.signedEntryTimestamp = Buffer.alloc(70, 1).toString('base64');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(withSet, KEY)), 'malformed');
  // logIndex is unsigned in v2: it must be the proof's index.
  const idx = fixtureJson(REKOR_V2_ENTRIES[0]);
  idx.logIndex = 644;
  assert.equal(anchorCodeOf(() => verifyRekorEntry(idx, KEY)), 'inclusion_invalid');
});

const flip = (b: Buffer, p: number, bit: number): Buffer => {
  const m = Buffer.from(b);
  m[p] ^= 1 << bit;
  return m;
};

test('every one-bit change to every signed or hashed part of the v2 entry is refused', () => {
  let total = 0;
  for (const name of REKOR_V2_ENTRIES) {
    const orig = fixtureJson(name);
    const cases: Mutation[] = [];
    const bits = (what: string, get: (e: Entry) => Buffer, set: (e: Entry, b: Buffer) => void) => {
      const b = get(orig);
      for (let p = 0; p < b.length; p++) for (let bit = 0; bit < 8; bit++) cases.push([`${what}[${p}]^${bit}`, (e) => set(e, flip(b, p, bit))]);
    };
    bits('body', (e) => Buffer.from(e.canonicalizedBody, 'base64'), (e, b) => (e.canonicalizedBody = b.toString('base64')));
    bits('logID', (e) => Buffer.from(e.logID, 'hex'), (e, b) => (e.logID = b.toString('hex')));
    bits('rootHash', (e) => Buffer.from(e.inclusionProof.rootHash, 'hex'), (e, b) => (e.inclusionProof.rootHash = b.toString('hex')));
    orig.inclusionProof.hashes.forEach((_: string, i: number) =>
      bits(`hashes[${i}]`, (e) => Buffer.from(e.inclusionProof.hashes[i], 'hex'), (e, b) => (e.inclusionProof.hashes[i] = b.toString('hex'))),
    );
    // The checkpoint as text (note, blank line, signature line) and its decoded signature bytes.
    bits('checkpoint', (e) => Buffer.from(e.inclusionProof.checkpoint, 'utf8'), (e, b) => (e.inclusionProof.checkpoint = b.toString('utf8')));
    const cp: string = orig.inclusionProof.checkpoint;
    const sigAt = cp.lastIndexOf(' ') + 1;
    const sig = Buffer.from(cp.slice(sigAt, -1), 'base64');
    for (let p = 0; p < sig.length; p++)
      for (let bit = 0; bit < 8; bit++)
        cases.push([`note signature[${p}]^${bit}`, (e) => (e.inclusionProof.checkpoint = cp.slice(0, sigAt) + flip(sig, p, bit).toString('base64') + '\n')]);
    const num = (...a: Parameters<typeof numberMutations>) => cases.push(...numberMutations(...a));
    num('logIndex', (e) => e.logIndex, (e, v) => (e.logIndex = v));
    num('proof.logIndex', (e) => e.inclusionProof.logIndex, (e, v) => (e.inclusionProof.logIndex = v));
    num('proof.treeSize', (e) => e.inclusionProof.treeSize, (e, v) => (e.inclusionProof.treeSize = v));
    assert.deepEqual(survivors(orig, cases, (e) => anchorCodeOf(() => verifyRekorEntry(e, KEY)) === 'valid'), [], `${name}: mutations that still verify`);
    total += cases.length;
  }
  assert.ok(total > 14000, `ran ${total} mutations`);
});

test('an entry file (v1 or v2) with a duplicate key is refused, whichever copy is genuine', () => {
  for (const [name, key] of [[REKOR_V2_ENTRIES[0], KEY], ['rekor-entry-1.json', createPublicKey(fixtureText('rekor-public.pem'))]] as const) {
    const text = fixtureText(name);
    assert.equal(anchorCodeOf(() => verifyRekorEntry(text, key)), 'valid');
    for (const [field, forged] of [
      ['"logIndex"', '"logIndex": 1,'],
      ['"canonicalizedBody"', `"canonicalizedBody": "${Buffer.from('{}').toString('base64')}",`],
    ] as const) {
      const dup = text.replace(field, `${forged}\n  ${field}`);
      assert.notEqual(dup, text);
      assert.equal(anchorCodeOf(() => verifyRekorEntry(dup, key)), 'malformed', `${name} ${field}`);
      assert.equal(anchorCodeOf(() => verifyRekorEntry(Buffer.from(dup), key)), 'malformed', `${name} ${field} (bytes)`);
    }
  }
});

test('anchor verify (the binary) accepts the real v2 entry and refuses it with one proof bit flipped', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-v2fix-'));
  const e = fixtureJson(REKOR_V2_ENTRIES[0]);
  writeFileSync(join(dir, 'ok.json'), JSON.stringify(e));
  const h: string = e.inclusionProof.hashes[1];
  e.inclusionProof.hashes[1] = h.slice(0, -1) + (h.endsWith('0') ? '1' : '0');
  writeFileSync(join(dir, 'bad.json'), JSON.stringify(e));
  const run = (f: string) => spawnSync(process.execPath, [CLI, 'anchor', 'verify', '--rekor-entry', join(dir, f), '--rekor-key', fixturePath(REKOR_V2_KEY), '--json'], { encoding: 'utf8' });
  const ok = run('ok.json');
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.equal(JSON.parse(ok.stdout).logVersion, 2);
  const bad = run('bad.json');
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.equal(JSON.parse(bad.stdout).reason, 'inclusion_invalid');
});
