// Signing on a signing thread with a key lent by the main thread (ADR 042): a key file's
// KeyObject, or a PKCS#11 session and key object that the main thread opened and logged in.
// The thread only calls C_SignInit and C_Sign on the lent session: it never initialises,
// finalises or logs in to the module (that state is the process's, owned by the lender).
import { sign, verify } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Pkcs11 from 'pkcs11js';
import type { ThreadKey } from '../core/signer.js';
import { CKM_EDDSA, WRONG_SIGNATURE } from './pkcs11.js';

const modules = new Map<string, Pkcs11.PKCS11>();

function moduleAt(path: string): Pkcs11.PKCS11 {
  let p = modules.get(path);
  if (!p) {
    const pkcs = createRequire(import.meta.url)('pkcs11js') as typeof Pkcs11;
    p = new pkcs.PKCS11();
    p.load(path); // the library the process already loaded and initialised
    modules.set(path, p);
  }
  return p;
}

/**
 * Ed25519 with the lent key, on this thread, for one run. Each token signature is checked with
 * the public key before it seals an entry: a token may answer with a signature of another key (a
 * failover to an HSM holding another, a key replaced under the handle) or a faulty one, at any
 * entry of a run, and an entry it signed wrong would be committed, its call forwarded, and verify
 * refuse the ledger. The check costs about what node's signature does, on the thread that bounds a
 * token gate's calls/s (ADR 043), not on the gate's.
 */
export function threadSigner(key: ThreadKey): (message: Buffer) => Buffer {
  if (key.kind === 'file') return (m) => sign(null, m, key.key);
  const p = moduleAt(key.modulePath);
  return (m) => {
    p.C_SignInit(key.session, { mechanism: CKM_EDDSA }, key.handle);
    const sig = p.C_Sign(key.session, m, Buffer.alloc(64));
    if (!verify(null, m, key.publicKey, sig)) throw Object.assign(new Error(WRONG_SIGNATURE), { name: WRONG_SIGNATURE });
    return sig;
  };
}
