// A key in a file: a node:crypto Ed25519 private key. Ed25519ph comes from its seed (the JWK `d`)
// through @noble/curves, since node:crypto has no prehash variant.
import { createPrivateKey, createPublicKey, KeyObject, sign } from 'node:crypto';
import { keyIdOf, SignerUnavailable, type Signer, type ThreadKey } from '../core/signer.js';
import { ed25519Seed, signEd25519ph } from '../ledger/anchors/rekor/ed25519ph.js';

export class FileSigner implements Signer {
  readonly publicKey: KeyObject;
  readonly keyId: string;
  readonly prehash = true;
  private closed = false;

  constructor(
    readonly privateKey: KeyObject,
    readonly where = 'a key file',
  ) {
    if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError('not an Ed25519 private key');
    this.publicKey = createPublicKey(privateKey);
    this.keyId = keyIdOf(this.publicKey);
  }

  sign(message: Uint8Array): Buffer {
    if (this.closed) throw new SignerUnavailable(`the key ${this.where} is closed`);
    return sign(null, message, this.privateKey);
  }

  lendToThread<T>(use: (key: ThreadKey) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new SignerUnavailable(`the key ${this.where} is closed`));
    return use({ kind: 'file', key: this.privateKey });
  }

  signPrehashed(artifact: Uint8Array): Buffer {
    if (this.closed) throw new SignerUnavailable(`the key ${this.where} is closed`);
    return Buffer.from(signEd25519ph(ed25519Seed(this.privateKey), artifact));
  }

  close(): void {
    this.closed = true;
  }
}

/** A Signer for a private KeyObject or PKCS#8 PEM; a Signer is returned as it is. */
export function asSigner(key: Signer | KeyObject | string): Signer {
  if (typeof key === 'string') return new FileSigner(createPrivateKey(key));
  return key instanceof KeyObject ? new FileSigner(key) : key;
}
