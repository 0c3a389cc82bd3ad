// The gate's Ed25519 signing key: PKCS#8 PEM, mode 0600, never overwritten.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { sha256Hex } from '../util/digest.js';

export class KeyError extends Error {}

export interface GateKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** sha256 of the SPKI DER: names the key in entries and exports. */
  keyId: string;
}

export function generateGateKeyPem(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export function keyIdOf(publicKey: KeyObject): string {
  return 'sha256:' + sha256Hex(publicKey.export({ type: 'spki', format: 'der' }));
}

export function loadPublicKey(path: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(readFileSync(path));
  } catch {
    throw new KeyError(`cannot read public key ${path}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new KeyError(`${path} is not an Ed25519 public key`);
  return key;
}

export function loadGateKey(path: string): GateKey {
  let privateKey: KeyObject;
  try {
    const st = statSync(path);
    if ((st.mode & 0o077) !== 0) throw new KeyError(`gate key ${path} is readable by others (mode must be 0600)`);
    privateKey = createPrivateKey(readFileSync(path));
  } catch (e) {
    if (e instanceof KeyError) throw e;
    throw new KeyError(`cannot read gate key ${path} (run cloakpipe init)`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new KeyError(`gate key ${path} is not Ed25519`);
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}
