// The gate's Ed25519 signing key in the home: PKCS#8 PEM, mode 0600, never overwritten. (A key in
// a PKCS#11 token is keys/pkcs11.ts; either is a Signer.)
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { keyIdOf, type Signer } from '../core/signer.js';
import { FileSigner } from '../keys/file.js';
import { holdsPrivateKey, privateKeyRefusal } from '../keys/public.js';
import { readSecretFile, SecretFileError } from '../keys/secret-file.js';

export { keyIdOf };

export class KeyError extends Error {}

/** The gate's key: whatever signs for it (a file or a token). */
export type GateKey = Signer;

export function generateGateKeyPem(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export function loadPublicKey(path: string): KeyObject {
  let key: KeyObject;
  let pem: Buffer;
  try {
    pem = readFileSync(path);
    key = createPublicKey(pem);
  } catch {
    throw new KeyError(`cannot read public key ${path}`);
  }
  if (holdsPrivateKey(pem)) throw new KeyError(privateKeyRefusal(`public key ${path}`));
  if (key.asymmetricKeyType !== 'ed25519') throw new KeyError(`${path} is not an Ed25519 public key`);
  return key;
}

/** An Ed25519 private key PEM of the reader's own that only it can read; `what` names it in errors. */
export function loadEd25519PrivateKey(path: string, what: string, hint: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(readSecretFile(path, what));
  } catch (e) {
    if (e instanceof SecretFileError && e.refused) throw new KeyError(e.message);
    throw new KeyError(`cannot read ${what} ${path} (${hint})`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new KeyError(`${what} ${path} is not Ed25519`);
  return key;
}

export function loadGateKey(path: string): FileSigner {
  return new FileSigner(loadEd25519PrivateKey(path, 'gate key', 'run cloakpipe init'), path);
}
