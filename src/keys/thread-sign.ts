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

/** A run's signing: `sign` each body's bytes; `checked` settles once every signature made is checked. */
export interface ThreadSigning {
  sign(message: Buffer): Buffer;
  /** Resolves when each token signature so far verifies with the public key; else rejects, WrongSignature. */
  checked(): Promise<void>;
}

const wrong = () => Object.assign(new Error(WRONG_SIGNATURE), { name: WRONG_SIGNATURE });

/**
 * Ed25519 with the lent key, on this thread, for one run. Each token signature is checked with
 * the public key before its run is handed back: a token may answer with a signature of another
 * key (a failover to an HSM holding another, a key replaced under the handle) or a faulty one, at
 * any entry of a run, and an entry it signed wrong would be committed, its call forwarded, and
 * verify refuse the ledger. The check runs on libuv's pool while this thread asks the token for
 * the next signature (the thread's serial signing bounds a token gate's calls/s, ADR 043); the
 * run's seals go back only once every check has passed, so a wrong one still commits nothing.
 */
export function threadSigner(key: ThreadKey): ThreadSigning {
  if (key.kind === 'file') return { sign: (m) => sign(null, m, key.key), checked: async () => undefined };
  const p = moduleAt(key.modulePath);
  let checks: Promise<boolean>[] = [];
  return {
    sign: (m) => {
      p.C_SignInit(key.session, { mechanism: CKM_EDDSA }, key.handle);
      const sig = p.C_Sign(key.session, m, Buffer.alloc(64));
      checks.push(new Promise((resolve) => verify(null, m, key.publicKey, sig, (e, good) => resolve(e === null && good))));
      return sig;
    },
    checked: async () => {
      const all = await Promise.all(checks);
      checks = [];
      if (all.includes(false)) throw wrong();
    },
  };
}
