// Approver keys: the public halves given to the gate with --approver-key (repeatable). Only a
// receipt signed by one of them can authorize a call; each is named by its key id.
import type { KeyObject } from 'node:crypto';
import { KeyError, keyIdOf, loadPublicKey } from '../ledger/keys.js';

export type ApproverKeys = ReadonlyMap<string, KeyObject>;

/**
 * An approval is someone else's word than the gate's: with the gate key as an approver key,
 * whatever can sign the ledger (the gate's host, its token) could also approve its own calls.
 */
export function refuseGateKey(approverKeyId: string, gateKeyId: string, what: string): void {
  if (approverKeyId === gateKeyId) throw new KeyError(`${what} is the gate key itself: an approver signs with a key of their own (cloakpipe keygen)`);
}

/** Load PEM public keys (Ed25519, SPKI; a private key is refused); none may be the gate key. Throws KeyError. */
export function loadApproverKeys(paths: readonly string[], gateKeyId: string): ApproverKeys {
  const keys = new Map<string, KeyObject>();
  for (const p of paths) {
    const k = loadPublicKey(p);
    refuseGateKey(keyIdOf(k), gateKeyId, `approver key ${p}`);
    keys.set(keyIdOf(k), k);
  }
  return keys;
}
