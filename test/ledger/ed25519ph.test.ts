// Ed25519ph as Rekor verifies it for hashedrekord: RFC 8032 vector, sign/verify agreement, and
// the gate key's seed taken from a node:crypto KeyObject.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import {
  ed25519PublicRaw,
  ed25519Seed,
  signEd25519ph,
  verifyEd25519ph,
  verifyEd25519phDigest,
} from '../../src/ledger/anchors/rekor/ed25519ph.js';

test('RFC 8032 section 7.3 Ed25519ph test vector ("abc")', () => {
  const seed = Buffer.from('833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42', 'hex');
  const pub = Buffer.from('ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf', 'hex');
  const sig = Buffer.from(
    '98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406',
    'hex',
  );
  assert.deepEqual(Buffer.from(signEd25519ph(seed, Buffer.from('abc'))), sig);
  assert.ok(verifyEd25519ph(sig, Buffer.from('abc'), pub));
  assert.ok(verifyEd25519phDigest(sig, createHash('sha512').update('abc').digest(), pub));
});

test('the seed and public key come out of node:crypto KeyObjects (PKCS#8 PEM round trip)', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const seed = ed25519Seed(createPrivateKey(pem));
  assert.equal(seed.length, 32);
  const root = createHash('sha256').update('epoch').digest();
  const sig = signEd25519ph(seed, root);
  const raw = ed25519PublicRaw(publicKey);
  assert.deepEqual(ed25519PublicRaw(createPublicKey(privateKey)), raw);
  assert.ok(verifyEd25519ph(sig, root, raw));
  assert.ok(verifyEd25519phDigest(sig, createHash('sha512').update(root).digest(), raw));
  assert.throws(() => ed25519Seed(publicKey));
  assert.throws(() => ed25519Seed(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey));
});

test('Ed25519ph and pure Ed25519 never verify as each other; other digests, keys and bytes fail', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = ed25519PublicRaw(publicKey);
  const root = createHash('sha256').update('epoch').digest();
  const pure = sign(null, root, privateKey);
  assert.equal(verifyEd25519ph(pure, root, raw), false);
  const ph = signEd25519ph(ed25519Seed(privateKey), root);
  assert.notDeepEqual(Buffer.from(ph), pure);
  assert.equal(verifyEd25519phDigest(ph, createHash('sha256').update(root).digest(), raw), false, 'sha256 is not the prehash');
  assert.equal(verifyEd25519ph(ph, Buffer.from(root).fill(1, 0, 1), raw), false);
  assert.equal(verifyEd25519ph(ph, root, ed25519PublicRaw(generateKeyPairSync('ed25519').publicKey)), false);
  for (let i = 0; i < 64; i++) {
    const bad = Buffer.from(ph);
    bad[i] ^= 1 << (i % 8);
    assert.equal(verifyEd25519ph(bad, root, raw), false, `signature byte ${i}`);
  }
});
