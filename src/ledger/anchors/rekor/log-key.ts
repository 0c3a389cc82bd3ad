// The log's identity is its key: logID is SHA-256 of the key's SPKI DER, so an entry naming
// another log (or a key swapped for another) is refused before any signature is checked.
import { createHash, verify as cryptoVerify, type KeyObject } from 'node:crypto';

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
