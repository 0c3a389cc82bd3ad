// Approver keys: the public halves given to the gate with --approver-key (repeatable). Only a
// receipt signed by one of them can authorize a call; each is named by its key id.
import type { KeyObject } from 'node:crypto';
import { KeyError, keyIdOf, loadPublicKey } from '../ledger/keys.js';
import { openTokenKey } from '../keys/pkcs11.js';
import { SignerUnavailable } from '../core/signer.js';

export type ApproverKeys = ReadonlyMap<string, KeyObject>;

/**
 * An approval is someone else's word than the gate's: with the gate key as an approver key,
 * whatever can sign the ledger (the gate's host, its token) could also approve its own calls.
 * So too an approver key in the gate key's token: a token has one user PIN, and the gate holds it.
 * `approverKey`: the approver's public key (default: the token key of that id this process opened).
 */
export function refuseGateKey(approverKeyId: string, gateKeyId: string, what: string, approverKey?: KeyObject): void {
  if (approverKeyId === gateKeyId) throw new KeyError(`${what} is the gate key itself: an approver signs with a key of their own (cloakpipe keygen)`);
  const gate = openTokenKey(gateKeyId);
  const approver = approverKey ?? openTokenKey(approverKeyId)?.publicKey;
  if (gate === undefined || approver === undefined) return; // a gate key in a file reaches no token
  const fix = "keep approver keys in a token of their own, with a PIN the gate does not hold (cloakpipe keygen --key 'pkcs11:token=…')";
  let reached: boolean;
  try {
    reached = gate.reaches(approver);
  } catch (e) {
    if (!(e instanceof SignerUnavailable)) throw e;
    // Fail closed: a token that did not answer has not said the key is elsewhere.
    throw new KeyError(`${what}: cannot tell whether it is a key in the gate key's token, which the gate logs in to: ${e.message}; not started, start again when the token answers`);
  }
  if (reached)
    throw new KeyError(`${what} is a key in the gate key's token ${gate.token}, which the gate logs in to: its host could sign approvals of its own calls; ${fix}`);
  const approverToken = openTokenKey(approverKeyId);
  if (approverToken !== undefined && gate.sharesPin(approverToken))
    throw new KeyError(`${what} is in token ${approverToken.token}, whose PIN is the gate key's: whoever holds the gate's PIN could sign approvals of its own calls; ${fix}`);
}

/** Load PEM public keys (Ed25519, SPKI; a private key is refused); none may be the gate key or in its token. Throws KeyError. */
export function loadApproverKeys(paths: readonly string[], gateKeyId: string): ApproverKeys {
  const keys = new Map<string, KeyObject>();
  for (const p of paths) {
    const k = loadPublicKey(p);
    refuseGateKey(keyIdOf(k), gateKeyId, `approver key ${p}`, k);
    keys.set(keyIdOf(k), k);
  }
  return keys;
}
