// The log's identity is its key: logID is SHA-256 of the key's SPKI DER, so an entry naming
// another log (or a key swapped for another) is refused before any signature is checked.
import { createHash, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { fail } from '../errors.js';

const ids = new WeakMap<KeyObject, Buffer>();

export function logIdOf(key: KeyObject): Buffer {
  let id = ids.get(key);
  if (!id) {
    id = createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest();
    ids.set(key, id);
  }
  return Buffer.from(id);
}

/** Verifies a log signature: ECDSA (DER, SHA-256 for P-256, SHA-384 for P-384) or Ed25519. */
export function verifyLogSignature(key: KeyObject, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    if (key.asymmetricKeyType === 'ed25519') return cryptoVerify(null, data, key, signature);
    if (key.asymmetricKeyType === 'ec') {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      const hash = curve === 'secp384r1' ? 'sha384' : curve === 'secp521r1' ? 'sha512' : 'sha256';
      return cryptoVerify(hash, data, { key, dsaEncoding: 'der' }, signature);
    }
    if (key.asymmetricKeyType === 'rsa') return cryptoVerify('sha256', data, key, signature);
    return false;
  } catch {
    return false;
  }
}

/**
 * C2SP signed-note key ID (c2sp.org/signed-note), in full (32 bytes; a signature line carries the
 * first 4): Ed25519 is SHA-256(name || 0x0A || 0x01 || 32-byte key); ECDSA (type 0x02) is
 * SHA-256 of the SPKI DER. Rekor v2 names a log by this ID (`logId.keyId`), which binds origin,
 * key and signature type together. Other key types are not used by tlog-tiles logs: refused.
 */
export function noteKeyId(name: string, key: KeyObject): Buffer | null {
  if (key.asymmetricKeyType === 'ed25519') {
    const raw = key.export({ type: 'spki', format: 'der' }).subarray(-32);
    return createHash('sha256').update(Buffer.concat([Buffer.from(name + '\n', 'utf8'), Buffer.from([0x01]), raw])).digest();
  }
  if (key.asymmetricKeyType === 'ec') return logIdOf(key);
  return null;
}

/** Rekor v1 signs checkpoints as the origin's first word with the SPKI-hash key hint. */
export const v1Signer = (key: KeyObject) => (origin: string) => ({ name: origin.split(' ')[0], keyId: logIdOf(key) });

/** A tlog-tiles (Rekor v2) log signs as its origin with its C2SP key ID. */
export const v2Signer = (key: KeyObject) => (origin: string) => ({
  name: origin,
  keyId: noteKeyId(origin, key) ?? fail('key_invalid', 'rekor key: a tlog-tiles log key is Ed25519 or ECDSA'),
});
