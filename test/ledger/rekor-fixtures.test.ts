// Real entries of the public Sigstore Rekor log verify with our code, and no one-byte change does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { anchorCodeOf } from '../helpers/anchor-code.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import { numberMutations, survivors, type Mutation } from '../helpers/mutations.js';
import { REKOR_ENTRIES, fixtureJson, fixtureText } from '../helpers/public-log.js';

const KEY = createPublicKey(fixtureText('rekor-public.pem'));
type Entry = Record<string, any>;

const flipBit = (b: Buffer, p: number, bit = p % 8): Buffer => {
  const m = Buffer.from(b);
  m[p] ^= 1 << bit;
  return m;
};

test('every public Rekor fixture verifies (SET, inclusion proof, signed checkpoint)', () => {
  const expected: Record<string, { kind: string; logIndex: number; treeSize: number }> = {
    'rekor-entry-1.json': { kind: 'hashedrekord', logIndex: 27246492, treeSize: 23083062 },
    'rekor-entry-2.json': { kind: 'dsse', logIndex: 155690850, treeSize: 33786589 },
    'rekor-entry-3.json': { kind: 'hashedrekord', logIndex: 1462192450, treeSize: 1340288195 },
    'rekor-entry-4.json': { kind: 'intoto', logIndex: 27244980, treeSize: 23081551 },
  };
  for (const name of REKOR_ENTRIES) {
    const s = verifyRekorEntry(fixtureText(name), fixtureText('rekor-public.pem'));
    assert.equal(s.kind, expected[name].kind);
    assert.equal(s.logIndex, expected[name].logIndex);
    assert.equal(s.treeSize, expected[name].treeSize);
    assert.equal(s.logID, 'c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d');
    assert.match(s.checkpointOrigin, /^rekor\.sigstore\.dev - \d+$/);
  }
});

test('the API form ({uuid: {body, verification: {...}}}) verifies too', () => {
  const e = fixtureJson('rekor-entry-1.json');
  const api = {
    ['24296fb24b8ad77a' + 'a'.repeat(64)]: {
      body: e.canonicalizedBody,
      integratedTime: e.integratedTime,
      logID: e.logID,
      logIndex: e.logIndex,
      verification: { inclusionProof: e.inclusionProof, signedEntryTimestamp: e.signedEntryTimestamp },
    },
  };
  assert.equal(verifyRekorEntry(api, KEY).logIndex, e.logIndex);
});

test('--digest: the recorded digest is accepted, any other refused with body_mismatch', () => {
  const s = verifyRekorEntry(fixtureJson('rekor-entry-1.json'), KEY, { digest: 'sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf' });
  assert.equal(s.digestMatched, 'recorded');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(fixtureJson('rekor-entry-1.json'), KEY, { digest: 'sha256:' + 'a0'.repeat(32) })), 'body_mismatch');
  // dsse / intoto: the payload digest counts.
  const d = verifyRekorEntry(fixtureJson('rekor-entry-2.json'), KEY).recordedDigests[0];
  assert.equal(verifyRekorEntry(fixtureJson('rekor-entry-2.json'), KEY, { digest: d }).digestMatched, 'recorded');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(fixtureJson('rekor-entry-4.json'), KEY, { digest: d })), 'body_mismatch');
});

test('another log key: log_id_mismatch; a right log id with a wrong key cannot verify', () => {
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
  for (const name of REKOR_ENTRIES) assert.equal(anchorCodeOf(() => verifyRekorEntry(fixtureJson(name), other)), 'log_id_mismatch');
  const e = fixtureJson('rekor-entry-1.json');
  e.logID = createHash('sha256').update(other.export({ type: 'spki', format: 'der' })).digest('hex');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e, other)), 'set_invalid');
});

test('a truncated inclusion proof fails with inclusion_invalid; a checkpoint for another tree with checkpoint_invalid', () => {
  for (const name of REKOR_ENTRIES) {
    const e = fixtureJson(name);
    e.inclusionProof.hashes.pop();
    assert.equal(anchorCodeOf(() => verifyRekorEntry(e, KEY)), 'inclusion_invalid', name);
  }
  // A genuine checkpoint of the same log, but for another tree: signature valid, size/root differ.
  const e = fixtureJson('rekor-entry-1.json');
  e.inclusionProof.checkpoint = fixtureJson('rekor-entry-4.json').inclusionProof.checkpoint;
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e, KEY)), 'checkpoint_invalid');
});

test('a checkpoint whose signature line names another key hint, or no signature, fails', () => {
  const e = fixtureJson('rekor-entry-1.json');
  const cp: string = e.inclusionProof.checkpoint;
  e.inclusionProof.checkpoint = cp.replace('wNI9aj', 'AAAAAA');
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e, KEY)), 'checkpoint_invalid');
  e.inclusionProof.checkpoint = cp.slice(0, cp.indexOf('\n\n') + 2);
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e, KEY)), 'checkpoint_invalid');
});

// Every significant datum, one bit flipped in each byte: body (decoded), SET (decoded), every
// proof hash, the root hash, the log id, every byte of the checkpoint text, and each bit of the
// numbers. Base64/hex are re-encoded canonically after the flip (the decoders refuse any other
// spelling, so textual re-spellings cannot pass either; see encoding.ts).
test('every one-byte change to every public Rekor fixture fails', () => {
  let total = 0;
  for (const name of REKOR_ENTRIES) {
    const orig = fixtureJson(name);
    const cases: Mutation[] = [];
    const bytesCase = (what: string, get: (e: Entry) => Buffer, set: (e: Entry, b: Buffer) => void) => {
      const b = get(orig);
      for (let p = 0; p < b.length; p++) cases.push([`${what}[${p}]`, (e) => set(e, flipBit(b, p))]);
    };
    bytesCase('body', (e) => Buffer.from(e.canonicalizedBody, 'base64'), (e, b) => (e.canonicalizedBody = b.toString('base64')));
    bytesCase('set', (e) => Buffer.from(e.signedEntryTimestamp, 'base64'), (e, b) => (e.signedEntryTimestamp = b.toString('base64')));
    bytesCase('logID', (e) => Buffer.from(e.logID, 'hex'), (e, b) => (e.logID = b.toString('hex')));
    bytesCase('rootHash', (e) => Buffer.from(e.inclusionProof.rootHash, 'hex'), (e, b) => (e.inclusionProof.rootHash = b.toString('hex')));
    orig.inclusionProof.hashes.forEach((_: string, i: number) =>
      bytesCase(`hashes[${i}]`, (e) => Buffer.from(e.inclusionProof.hashes[i], 'hex'), (e, b) => (e.inclusionProof.hashes[i] = b.toString('hex'))),
    );
    bytesCase('checkpoint', (e) => Buffer.from(e.inclusionProof.checkpoint, 'utf8'), (e, b) => (e.inclusionProof.checkpoint = b.toString('utf8')));
    const numCase = (...a: Parameters<typeof numberMutations>) => cases.push(...numberMutations(...a));
    numCase('integratedTime', (e) => e.integratedTime, (e, v) => (e.integratedTime = v));
    numCase('logIndex', (e) => e.logIndex, (e, v) => (e.logIndex = v));
    numCase('proof.logIndex', (e) => e.inclusionProof.logIndex, (e, v) => (e.inclusionProof.logIndex = v));
    numCase('proof.treeSize', (e) => e.inclusionProof.treeSize, (e, v) => (e.inclusionProof.treeSize = v));
    assert.deepEqual(survivors(orig, cases, (e) => anchorCodeOf(() => verifyRekorEntry(e, KEY)) === 'valid'), [], `${name}: mutations that still verify`);
    total += cases.length;
  }
  assert.ok(total > 15000, `ran ${total} mutations`);
});

test('textual re-spellings are refused: upper-case hex, non-canonical base64, JSON string numbers', () => {
  const e1 = fixtureJson('rekor-entry-1.json');
  e1.logID = e1.logID.toUpperCase();
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e1, KEY)), 'malformed');
  const e2 = fixtureJson('rekor-entry-1.json');
  // "=" padded SET: flip the unused low bits of the last base64 digit.
  const s: string = e2.signedEntryTimestamp;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  if (pad > 0) {
    const i = s.length - pad - 1;
    const v = alphabet.indexOf(s[i]) ^ 1;
    e2.signedEntryTimestamp = s.slice(0, i) + alphabet[v] + s.slice(i + 1);
    assert.deepEqual(Buffer.from(e2.signedEntryTimestamp, 'base64'), Buffer.from(s, 'base64'), 'same bytes, other spelling');
    assert.equal(anchorCodeOf(() => verifyRekorEntry(e2, KEY)), 'malformed');
  }
  const e3 = fixtureJson('rekor-entry-1.json');
  e3.logIndex = String(e3.logIndex);
  assert.equal(anchorCodeOf(() => verifyRekorEntry(e3, KEY)), 'malformed');
});
