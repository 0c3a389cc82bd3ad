// The one way anything is signed with the gate's key (entries, epochs, checkpoints, Rekor
// anchors) or an approver's (receipts): through a Signer, whether the Ed25519 private key is a
// file or an object inside a PKCS#11 token that never lets it out. Synchronous, like the ledger
// append it sits in: a token's C_Sign blocks the way node:crypto's sign does. A key may also sign
// on a signing thread of this process (lendToThread): the ledger then seals a group's entries off
// the main thread (ADR 042).
import type { KeyObject } from 'node:crypto';
import { sha256Hex } from './digest.js';

export interface Signer {
  /** The Ed25519 public key. */
  readonly publicKey: KeyObject;
  /** sha256 of the SPKI DER: names the key in entries and exports. */
  readonly keyId: string;
  /** Where the private key is, for messages: a path or a token URI (never a PIN). */
  readonly where: string;
  /** Ed25519 (RFC 8032, pure) over `message`. Throws SignerUnavailable when the key cannot sign now. */
  sign(message: Uint8Array): Buffer;
  /**
   * Ed25519ph (RFC 8032 section 5.1: SHA-512 prehash, empty context) over `artifact`, or null when
   * the key cannot make one (a token without the prehash variant of CKM_EDDSA).
   */
  signPrehashed(artifact: Uint8Array): Buffer | null;
  /**
   * Lends the key to a signing thread of this process for one run of signatures (ADR 042): `use`
   * gets what the thread needs, and resolves when the run is signed. Absent: the key signs on
   * the calling thread only.
   */
  lendToThread?<T>(use: (key: ThreadKey) => Promise<T>): Promise<T>;
  /** Signing on this thread is slow enough (a token) that even one signature goes to the thread. */
  readonly slowInline?: boolean;
  /** Whether signPrehashed signs (false: it returns null). */
  readonly prehash: boolean;
  /** Releases the key (a token's session); signing afterwards throws. */
  close(): void;
}

/**
 * What a signing thread needs: a key file's private KeyObject (it never leaves the process), or a
 * PKCS#11 module with a session and key object opened by this process (the thread neither logs
 * in, nor initialises or finalises the module: the lender owns them, and lends them one run at a
 * time).
 */
export type ThreadKey = { kind: 'file'; key: KeyObject } | { kind: 'token'; modulePath: string; session: Buffer; handle: Buffer; publicKey: KeyObject };

/** The key exists but cannot sign right now (the token was removed, the module fails). */
export class SignerUnavailable extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'SignerUnavailable';
  }
}

export function keyIdOf(publicKey: KeyObject): string {
  return 'sha256:' + sha256Hex(publicKey.export({ type: 'spki', format: 'der' }));
}
