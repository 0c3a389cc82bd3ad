// Ed25519ph (RFC 8032 section 5.1, prehash = SHA-512, empty context) for hashedrekord entries.
// Rekor's hashedrekord carries only a digest of the artifact, so for Ed25519 keys it verifies
// Ed25519ph, and Ed25519ph's prehash is SHA-512: Rekor calls Go's ed25519.VerifyWithOptions(pub,
// sha512(artifact), sig, {Hash: SHA512}) and accepts no other digest for Ed25519 keys.
// Here the artifact of an epoch anchor is the 32-byte epoch root; the entry's data.hash is
// {algorithm: "sha512", value: hex(SHA-512(root))} and its signature is Ed25519ph(root) by the
// gate key. Signing uses @noble/curves' ed25519ph on the artifact; verifying works from either the
// artifact or (as Rekor does) from the SHA-512 digest alone. A pure Ed25519 signature over the
// same bytes never verifies as Ed25519ph (the dom2 prefix differs), and vice versa.
import type { KeyObject } from 'node:crypto';
import { ed25519, ed25519ph } from '@noble/curves/ed25519.js';
import { eddsa } from '@noble/curves/abstract/edwards.js';
import { sha512 } from '@noble/hashes/sha2.js';

const DOM2_PREFIX = new TextEncoder().encode('SigEd25519 no Ed25519 collisions');

// dom2(phflag, ctx) || data, as in RFC 8032 section 5.1.
function dom2(data: Uint8Array, ctx: Uint8Array, phflag: boolean): Uint8Array {
  const out = new Uint8Array(DOM2_PREFIX.length + 2 + ctx.length + data.length);
  out.set(DOM2_PREFIX);
  out[DOM2_PREFIX.length] = phflag ? 1 : 0;
  out[DOM2_PREFIX.length + 1] = ctx.length;
  out.set(ctx, DOM2_PREFIX.length + 2);
  out.set(data, DOM2_PREFIX.length + 2 + ctx.length);
  return out;
}

// Ed25519ph whose "prehash" is the identity: the caller supplies SHA-512(artifact) itself.
// Verification only (signing needs scalar clamping, which ed25519ph does).
const fromDigest = eddsa(ed25519.Point, sha512, { domain: dom2, prehash: (m: Uint8Array) => m, zip215: false });

/** The 32-byte Ed25519 seed of a node:crypto private key (JWK `d`). */
export function ed25519Seed(key: KeyObject): Uint8Array {
  if (key.type !== 'private' || key.asymmetricKeyType !== 'ed25519') throw new TypeError('ed25519Seed: not an Ed25519 private key');
  const d = key.export({ format: 'jwk' }).d;
  if (typeof d !== 'string') throw new TypeError('ed25519Seed: key has no seed');
  const seed = Buffer.from(d, 'base64url');
  if (seed.length !== 32) throw new TypeError('ed25519Seed: seed is not 32 bytes');
  return seed;
}

/** The 32-byte raw Ed25519 public key of a node:crypto key (public or private). */
export function ed25519PublicRaw(key: KeyObject): Uint8Array {
  if (key.asymmetricKeyType !== 'ed25519') throw new TypeError('ed25519PublicRaw: not an Ed25519 key');
  const x = key.export({ format: 'jwk' }).x;
  if (typeof x !== 'string') throw new TypeError('ed25519PublicRaw: key has no public part');
  return Buffer.from(x, 'base64url');
}

/** Ed25519ph signature (64 bytes) over `artifact` with a 32-byte seed. */
export function signEd25519ph(seed: Uint8Array, artifact: Uint8Array): Uint8Array {
  return ed25519ph.sign(artifact, seed);
}

/** Verifies an Ed25519ph signature over the artifact itself. */
export function verifyEd25519ph(signature: Uint8Array, artifact: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519ph.verify(signature, artifact, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/** Verifies an Ed25519ph signature given only SHA-512(artifact), as Rekor does. */
export function verifyEd25519phDigest(signature: Uint8Array, sha512Digest: Uint8Array, publicKey: Uint8Array): boolean {
  if (sha512Digest.length !== 64) return false;
  try {
    return fromDigest.verify(signature, sha512Digest, publicKey);
  } catch {
    return false;
  }
}
