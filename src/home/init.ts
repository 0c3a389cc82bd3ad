// Creating a gate home (`cloakpipe init`). Never overwrites a key, and never creates one beside
// an existing ledger or operations database: a new key would orphan the ledger the old one
// signed (and start-up refuses a ledger its key did not sign). Every file it creates is 0600,
// the home and its inbox 0700.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { resolveHome, type HomePaths } from '../store/home.js';
import { openSqliteStore } from '../store/sqlite/store.js';
import { initPostgresStore } from '../store/postgres/store.js';
import { StoreError } from '../store/ports.js';
import { GATE_ID, storeTarget, type StoreTarget } from '../store/target.js';
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

/**
 * `init --store postgres://… --gate-id NAME`: the home holds the key and the gate's name; the
 * shared store's schema is created or migrated (safe from several gates at once) and the gate's
 * public key registered under NAME. Run again on the same home, it only migrates (and checks
 * that NAME is still registered with this key).
 */
export async function initHomeWith(dir: string | undefined, opts: { store?: string; gateId?: string }): Promise<HomePaths & { target: StoreTarget }> {
  const target = storeTarget(opts.store);
  if (target.kind === 'sqlite') {
    if (opts.gateId !== undefined) throw new HomeError('--gate-id names a gate in a shared store: use it with --store postgres://…');
    return { ...initHome(dir), target };
  }
  const gateId = opts.gateId;
  if (gateId === undefined) throw new HomeError('--store postgres://… needs --gate-id NAME (this gate\'s name in the shared store)');
  if (!GATE_ID.test(gateId)) throw new HomeError('--gate-id: letters, digits, . _ - (at most 64), starting with a letter or digit');
  const home = resolveHome(dir);
  if (existsSync(home.key)) {
    let had = '';
    try {
      had = readFileSync(home.gateId, 'utf8').trim();
    } catch {
      throw new HomeError(`${home.key} exists and is not a fleet gate's home (no gate-id): refusing to register it; use a new --home`);
    }
    if (had !== gateId) throw new HomeError(`this home is gate ${JSON.stringify(had)}, not ${JSON.stringify(gateId)}`);
    checkHomeDir(home);
  } else {
    for (const [what, p] of [['ledger', home.ledger], ['operations', home.operations]] as const)
      if (existsSync(p)) throw new HomeError(`${p} exists without its gate key; refusing to create a new key beside an existing ${what} database`);
    if (!existsSync(home.dir)) mkdirSync(home.dir, { recursive: true, mode: 0o700 });
    chmodSync(home.dir, 0o700);
    checkHomeDir(home);
    mkdirSync(home.approvals, { recursive: true, mode: 0o700 });
    chmodSync(home.approvals, 0o700);
    const { privatePem, publicPem } = generateGateKeyPem();
    writeFileSync(home.key, privatePem, { mode: 0o600, flag: 'wx' });
    writeFileSync(home.pub, publicPem, { mode: 0o600, flag: 'wx' });
    writeFileSync(home.gateId, gateId + '\n', { mode: 0o600, flag: 'wx' });
  }
  const publicPem = readFileSync(home.pub, 'utf8');
  try {
    await initPostgresStore({ url: target.url, gateId, publicKeyPem: publicPem, ...(target.schema ? { schema: target.schema } : {}) });
  } catch (e) {
    if (e instanceof StoreError) throw new HomeError(e.message);
    throw new HomeError(`the PostgreSQL store could not be initialised: ${(e as { code?: string }).code ?? (e as Error).message}`);
  }
  return { ...home, target };
}
