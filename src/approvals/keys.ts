// Approver keys: the public halves given to the gate with --approver-key (repeatable). Only a
// receipt signed by one of them can authorize a call; each is named by its key id.
import type { KeyObject } from 'node:crypto';
import { keyIdOf, loadPublicKey } from '../ledger/keys.js';

export type ApproverKeys = ReadonlyMap<string, KeyObject>;

/** Load PEM public keys (Ed25519, SPKI; a private PEM yields its public half). Throws KeyError. */
export function loadApproverKeys(paths: readonly string[]): ApproverKeys {
  const keys = new Map<string, KeyObject>();
  for (const p of paths) {
    const k = loadPublicKey(p);
    keys.set(keyIdOf(k), k);
  }
  return keys;
}
