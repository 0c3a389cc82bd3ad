// Creating a gate home (`cloakpipe init`). Never overwrites a key, and never creates one beside
// an existing ledger or operations database: a new key would orphan the ledger the old one
// signed (and start-up refuses a ledger its key did not sign). Every file it creates is 0600,
// the home and its inbox 0700.
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { resolveHome, type HomePaths } from '../store/home.js';
import { openSqliteStore } from '../store/sqlite/store.js';
import { generateGateKeyPem } from '../ledger/keys.js';
import { HomeError, checkHomeDir } from './open.js';

export function initHome(dir?: string): HomePaths {
  const home = resolveHome(dir);
  if (existsSync(home.key)) throw new HomeError(`${home.key} exists; refusing to overwrite a gate key`);
  for (const [what, p] of [['ledger', home.ledger], ['operations', home.operations]] as const)
    if (existsSync(p))
      throw new HomeError(`${p} exists without its gate key; refusing to create a new key beside an existing ${what} database (restore the key, or move the home away)`);
  let created = false;
  try {
    statSync(home.dir);
  } catch {
    mkdirSync(home.dir, { recursive: true, mode: 0o700 });
    created = true;
  }
  if (created) chmodSync(home.dir, 0o700); // whatever the umask
  checkHomeDir(home);
  mkdirSync(home.approvals, { recursive: true, mode: 0o700 });
  chmodSync(home.approvals, 0o700);
  const { privatePem, publicPem } = generateGateKeyPem();
  writeFileSync(home.key, privatePem, { mode: 0o600, flag: 'wx' });
  chmodSync(home.key, 0o600);
  writeFileSync(home.pub, publicPem, { mode: 0o600, flag: 'wx' });
  chmodSync(home.pub, 0o600);
  openSqliteStore(home, { create: true }).close();
  return home;
}
