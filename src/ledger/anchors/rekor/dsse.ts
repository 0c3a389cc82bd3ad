// The epoch anchor of a gate key that cannot sign Ed25519ph (a PKCS#11 token whose CKM_EDDSA has
// no prehash variant, SoftHSM 2.6 among them; docs/decisions/036). Rekor's hashedrekord accepts
// an Ed25519 key only as Ed25519ph, but its `dsse` kind (v1 dsse 0.0.1, v2 dsse 0.0.2) verifies a
// pure Ed25519 signature over the envelope's PAE: the envelope's payload is the 32-byte epoch
// root, its type EPOCH_PAYLOAD_TYPE, and the log records SHA-256 of the payload with the
// signature and the key. Offline, the entry commits to an epoch root when SHA-256(root) is the
// recorded payload hash and the gate key's signature verifies over PAE(type, root).
import { createHash, verify, type KeyObject } from 'node:crypto';

export const EPOCH_PAYLOAD_TYPE = 'application/vnd.cloakpipe.epoch-root';

/** DSSE's pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}

/** The DSSE envelope for an epoch root, signed (pure Ed25519) by `sign`. */
export function epochEnvelope(root: Uint8Array, sign: (message: Uint8Array) => Buffer) {
  return {
    payload: Buffer.from(root).toString('base64'),
    payloadType: EPOCH_PAYLOAD_TYPE,
    signatures: [{ keyid: '', sig: sign(pae(EPOCH_PAYLOAD_TYPE, root)).toString('base64') }],
  };
}

export function sha256(b: Uint8Array): Buffer {
  return createHash('sha256').update(b).digest();
}

/** Whether `signature` by the Ed25519 `key` covers the epoch envelope of `root`. */
export function verifiesEpochRoot(signature: Buffer, key: KeyObject, root: Uint8Array): boolean {
  if (key.asymmetricKeyType !== 'ed25519') return false;
  try {
    return verify(null, pae(EPOCH_PAYLOAD_TYPE, root), key, signature);
  } catch {
    return false;
  }
}
