// The entry body: what the log actually recorded. Guards against a genuine log entry being
// presented as evidence for another artifact (digest check) or for another signer (key check).
// For hashedrekord with an Ed25519 key the signature is Ed25519ph (see ed25519ph.ts), verified
// here from the recorded SHA-512 digest exactly as Rekor did when it accepted the entry.
import { createHash, createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { fail } from '../errors.js';
import { strictBase64, type DigestSpec } from '../encoding.js';
import { readEvidenceJson } from '../evidence-json.js';
import { ed25519PublicRaw, verifyEd25519ph, verifyEd25519phDigest } from './ed25519ph.js';
import { sha256, verifiesEpochRoot } from './dsse.js';

export type RekorBody = {
  kind: string;
  apiVersion: string;
  digests: DigestSpec[]; // what the entry commits to (artifact / payload / envelope digests)
  hashedrekord?: { hash: DigestSpec; signature: Buffer; key: KeyObject };
  /** A dsse entry's payload hash and signatures (read only when an epoch check needs them). */
  dsse?: { payloadHash: DigestSpec; signatures: { signature: () => Buffer; key: () => KeyObject }[] };
};

const ALGS = { sha256: 32, sha384: 48, sha512: 64 } as const;

function hashSpec(v: unknown): DigestSpec | null {
  if (v === null || typeof v !== 'object') return null;
  const { algorithm, value } = v as { algorithm?: unknown; value?: unknown };
  if (typeof algorithm !== 'string' || typeof value !== 'string' || !(algorithm in ALGS)) return null;
  const alg = algorithm as DigestSpec['algorithm'];
  if (!/^[0-9a-f]*$/.test(value) || value.length !== ALGS[alg] * 2) return null;
  return { algorithm: alg, value: Buffer.from(value, 'hex') };
}

function keyFromPem(pem: string): KeyObject {
  if (pem.includes('-----BEGIN CERTIFICATE-----')) return new X509Certificate(pem).publicKey;
  return createPublicKey(pem);
}

// Rekor v2 (protobuf-specs HashAlgorithm) names for the digests it records.
const V2_ALGS: Record<string, DigestSpec['algorithm']> = { SHA2_256: 'sha256', SHA2_384: 'sha384', SHA2_512: 'sha512' };

function v2Hash(v: unknown, what: string): DigestSpec {
  const { algorithm, digest } = (v ?? {}) as { algorithm?: unknown; digest?: unknown };
  const alg = typeof algorithm === 'string' ? V2_ALGS[algorithm] : undefined;
  if (!alg) fail('malformed', `${what}: unsupported hash algorithm`);
  const value = strictBase64(digest, `${what} digest`);
  if (value.length !== ALGS[alg]) fail('malformed', `${what}: digest has the wrong length`);
  return { algorithm: alg, value };
}

// hashedrekord 0.0.2 verifier: {keyDetails, publicKey: {rawBytes: DER SPKI}} or
// {keyDetails, x509Certificate: {rawBytes: DER}}.
function v2Key(verifier: any): { key: KeyObject; keyDetails: string } {
  if (typeof verifier?.keyDetails !== 'string') fail('malformed', 'hashedrekord 0.0.2: verifier has no keyDetails');
  const pk = verifier.publicKey?.rawBytes;
  const cert = verifier.x509Certificate?.rawBytes;
  if ((pk === undefined) === (cert === undefined)) fail('malformed', 'hashedrekord 0.0.2: verifier needs exactly one of publicKey, x509Certificate');
  try {
    const der = strictBase64(pk ?? cert, 'hashedrekord 0.0.2 verifier');
    const key = pk !== undefined ? createPublicKey({ key: der, format: 'der', type: 'spki' }) : new X509Certificate(der).publicKey;
    return { key, keyDetails: verifier.keyDetails };
  } catch {
    fail('malformed', 'hashedrekord 0.0.2: unreadable verifier key');
  }
}

function parseV2Body(b: { kind: string; apiVersion: string; spec: Record<string, any> }): RekorBody {
  const out: RekorBody = { kind: b.kind, apiVersion: b.apiVersion, digests: [] };
  if (b.kind === 'hashedrekord') {
    const s = b.spec.hashedRekordV002;
    if (!s || typeof s !== 'object') fail('malformed', 'hashedrekord 0.0.2: no hashedRekordV002');
    const hash = v2Hash(s.data, 'hashedrekord 0.0.2 data');
    const signature = strictBase64(s.signature?.content, 'hashedrekord 0.0.2 signature');
    const { key, keyDetails } = v2Key(s.signature?.verifier);
    // Rekor v2 verifies an Ed25519 hashedrekord as Ed25519ph over a SHA-512 digest only.
    if (key.asymmetricKeyType === 'ed25519' && keyDetails !== 'PKIX_ED25519_PH') fail('malformed', 'hashedrekord 0.0.2: an Ed25519 key must be PKIX_ED25519_PH');
    out.hashedrekord = { hash, signature, key };
    out.digests.push(hash);
  } else if (b.kind === 'dsse') {
    const s = b.spec.dsseV002;
    if (!s || typeof s !== 'object') fail('malformed', 'dsse 0.0.2: no dsseV002');
    const payloadHash = v2Hash(s.payloadHash, 'dsse 0.0.2 payloadHash');
    out.digests.push(payloadHash);
    const sigs = Array.isArray(s.signatures) ? s.signatures : [];
    out.dsse = {
      payloadHash,
      signatures: sigs.map((x: any) => ({ signature: () => strictBase64(x?.content, 'dsse 0.0.2 signature'), key: () => v2Key(x?.verifier).key })),
    };
  } else {
    fail('malformed', `entry body: ${b.kind} is not a Rekor v2 kind`);
  }
  return out;
}

/** The body of a v1 entry (any kind), or of a v2 entry (hashedrekord or dsse 0.0.2 only). */
export function parseRekorBody(bytes: Buffer, version: 1 | 2 = 1): RekorBody {
  const b = readEvidenceJson(bytes, 'entry body') as { kind?: unknown; apiVersion?: unknown; spec?: Record<string, any> };
  if (b === null || typeof b !== 'object' || Array.isArray(b)) fail('malformed', 'entry body: not an object');
  if (typeof b.kind !== 'string' || typeof b.apiVersion !== 'string' || typeof b.spec !== 'object' || b.spec === null || Array.isArray(b.spec)) {
    fail('malformed', 'entry body: missing kind, apiVersion or spec');
  }
  if (version === 2) {
    if (b.apiVersion !== '0.0.2') fail('malformed', 'entry body: a v2 entry records apiVersion 0.0.2');
    return parseV2Body({ kind: b.kind, apiVersion: b.apiVersion, spec: b.spec });
  }
  const spec = b.spec;
  const out: RekorBody = { kind: b.kind, apiVersion: b.apiVersion, digests: [] };
  const push = (v: unknown) => {
    const d = hashSpec(v);
    if (d) out.digests.push(d);
  };
  if (b.kind === 'hashedrekord') {
    const hash = hashSpec(spec.data?.hash);
    if (!hash) fail('malformed', 'hashedrekord: bad data.hash');
    const signature = strictBase64(spec.signature?.content, 'hashedrekord signature');
    const pem = strictBase64(spec.signature?.publicKey?.content, 'hashedrekord public key').toString('utf8');
    let key: KeyObject;
    try {
      key = keyFromPem(pem);
    } catch {
      fail('malformed', 'hashedrekord: unreadable public key');
    }
    out.hashedrekord = { hash, signature, key };
    out.digests.push(hash);
  } else if (b.kind === 'dsse') {
    push(spec.payloadHash);
    push(spec.envelopeHash);
    const payloadHash = hashSpec(spec.payloadHash);
    if (payloadHash && Array.isArray(spec.signatures)) {
      out.dsse = {
        payloadHash,
        signatures: spec.signatures.map((x: any) => ({
          signature: () => strictBase64(x?.signature, 'dsse signature'),
          key: () => {
            try {
              return keyFromPem(strictBase64(x?.verifier, 'dsse verifier').toString('utf8'));
            } catch {
              fail('malformed', 'dsse: unreadable verifier key');
            }
          },
        })),
      };
    }
  } else if (b.kind === 'intoto') {
    push(spec.content?.payloadHash);
    push(spec.content?.hash);
  }
  return out;
}

function sameKey(a: KeyObject, b: KeyObject): boolean {
  return a.export({ type: 'spki', format: 'der' }).equals(b.export({ type: 'spki', format: 'der' }));
}

export type BodyCheck = { bodySignature: 'verified' | 'not_checked'; digestMatched?: 'recorded' | 'artifact' };

/**
 * Checks the body: with `signer`, it must be a hashedrekord signed by exactly that key; an Ed25519
 * signature is always verified; with `digest`, the entry must commit to it, either as a recorded
 * digest or, for an Ed25519ph hashedrekord, as the artifact itself (the epoch root: the entry
 * records SHA-512 of it and the Ed25519ph signature over it verifies).
 */
export function checkRekorBody(body: RekorBody, opts: { digest?: DigestSpec; signer?: KeyObject }): BodyCheck {
  if (body.dsse && !body.hashedrekord && (opts.signer || opts.digest)) {
    const r = checkDsseBody(body.dsse, opts);
    if (r) return r;
  }
  const res: BodyCheck = { bodySignature: 'not_checked' };
  const hr = body.hashedrekord;
  if (opts.signer) {
    if (!hr) fail('body_signature_invalid', `entry is a ${body.kind}, not a hashedrekord`);
    if (!sameKey(hr.key, opts.signer)) fail('body_signature_invalid', 'entry is signed by another key');
  }
  if (hr && hr.key.asymmetricKeyType === 'ed25519') {
    if (hr.hash.algorithm !== 'sha512') fail('body_signature_invalid', 'an Ed25519ph hashedrekord must record a sha512 digest');
    if (!verifyEd25519phDigest(hr.signature, hr.hash.value, ed25519PublicRaw(hr.key))) {
      fail('body_signature_invalid', 'hashedrekord Ed25519ph signature does not verify');
    }
    res.bodySignature = 'verified';
  } else if (opts.signer) {
    fail('body_signature_invalid', 'the expected signer is not an Ed25519 key');
  }
  if (opts.digest) {
    const d = opts.digest;
    if (body.digests.some((x) => x.algorithm === d.algorithm && x.value.equals(d.value))) {
      res.digestMatched = 'recorded';
    } else if (
      hr &&
      hr.key.asymmetricKeyType === 'ed25519' &&
      hr.hash.algorithm === 'sha512' &&
      createHash('sha512').update(d.value).digest().equals(hr.hash.value) &&
      verifyEd25519ph(hr.signature, d.value, ed25519PublicRaw(hr.key))
    ) {
      res.digestMatched = 'artifact';
    } else {
      fail('body_mismatch', `entry does not commit to ${d.algorithm}:${d.value.toString('hex')}`);
    }
  }
  return res;
}

/**
 * A dsse entry as an epoch anchor (dsse.ts): the digest is the epoch root itself; SHA-256 of it
 * is the recorded payload hash and a signature by the signer (or, without one, by any recorded
 * key) verifies over the epoch envelope. Returns null when the digest is simply one the entry
 * records (an ordinary dsse entry checked against its payload or envelope hash, no signer).
 */
function checkDsseBody(d: NonNullable<RekorBody['dsse']>, opts: { digest?: DigestSpec; signer?: KeyObject }): BodyCheck | null {
  const root = opts.digest;
  if (!root) fail('body_signature_invalid', 'a dsse entry is checked against the epoch root it signs: give the digest');
  const isRoot = d.payloadHash.algorithm === 'sha256' && root.algorithm === 'sha256' && sha256(root.value).equals(d.payloadHash.value);
  if (!isRoot) {
    if (opts.signer) fail('body_mismatch', `entry does not commit to ${root.algorithm}:${root.value.toString('hex')}`);
    return null;
  }
  for (const s of d.signatures) {
    const key = s.key();
    if (opts.signer && !sameKey(key, opts.signer)) continue;
    if (verifiesEpochRoot(s.signature(), key, root.value)) return { bodySignature: 'verified', digestMatched: 'artifact' };
  }
  if (opts.signer && !d.signatures.some((s) => sameKey(s.key(), opts.signer!))) fail('body_signature_invalid', 'entry is signed by another key');
  fail('body_signature_invalid', 'dsse signature over the epoch envelope does not verify');
}
