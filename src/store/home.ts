// The gate's home ($CLOAKPIPE_HOME, default ~/.cloakpipe): where its key and stores live.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export interface HomePaths {
  dir: string;
  key: string;
  /** The pkcs11: URI of a gate key kept in a token (`init --key pkcs11:…`), instead of `key`. */
  token: string;
  pub: string;
  ledger: string;
  operations: string;
  approvals: string;
  /** The gate's name in a shared store (`init --store … --gate-id NAME` writes it). */
  gateId: string;
}

export function resolveHome(flag?: string): HomePaths {
  const dir = resolve(flag ?? process.env.CLOAKPIPE_HOME ?? join(homedir(), '.cloakpipe'));
  return {
    dir,
    key: join(dir, 'gate.key'),
    token: join(dir, 'gate.token'),
    pub: join(dir, 'gate.pub'),
    ledger: join(dir, 'ledger.db'),
    operations: join(dir, 'operations.db'),
    approvals: join(dir, 'approvals'),
    gateId: join(dir, 'gate-id'),
  };
}
