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
import { openTokenSigner, TokenError, type KeyChoice } from '../keys/token.js';
import { HomeError, checkHomeDir } from './open.js';

/**
 * The gate key of a new home: a fresh key file (gate.key), or with `--key pkcs11:…` the token's
 * key, generated inside the token when it holds none; the home then records the URI (gate.token)
 * and the public key only. Returns whether a token generated the pair.
 */
function createGateKey(home: HomePaths, key: KeyChoice | undefined): { generated: boolean } {
  if (key?.uri === undefined) {
    if (key?.pinFile !== undefined) throw new HomeError('--pin-file goes with --key pkcs11:…');
    const { privatePem, publicPem } = generateGateKeyPem();
    writeFileSync(home.key, privatePem, { mode: 0o600, flag: 'wx' });
    chmodSync(home.key, 0o600);
    writePrivate(home.pub, publicPem);
    return { generated: true };
  }
  let signer;
  try {
    signer = openTokenSigner(key.uri, key.pinFile, { create: true });
  } catch (e) {
    if (e instanceof TokenError) throw new HomeError(`gate key: ${e.message}`);
    throw e;
  }
  try {
    writePrivate(home.token, key.uri + '\n');
    writePrivate(home.pub, signer.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    return { generated: signer.created };
  } finally {
    signer.close();
  }
}

function writePrivate(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
}

function refuseExistingKey(home: HomePaths): void {
  for (const p of [home.key, home.token]) if (existsSync(p)) throw new HomeError(`${p} exists; refusing to overwrite a gate key`);
}

export function initHome(dir?: string, key?: KeyChoice): HomePaths & { generated: boolean } {
  const home = resolveHome(dir);
  refuseExistingKey(home);
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
  const { generated } = createGateKey(home, key);
  openSqliteStore(home, { create: true }).close();
  return { ...home, generated };
}

/**
 * `init --store postgres://… --gate-id NAME`: the home holds the key and the gate's name; the
 * shared store's schema is created or migrated (safe from several gates at once) and the gate's
 * public key registered under NAME. Run again on the same home, it only migrates (and checks
 * that NAME is still registered with this key).
 */
export async function initHomeWith(dir: string | undefined, opts: { store?: string; gateId?: string; key?: KeyChoice }): Promise<HomePaths & { target: StoreTarget; generated?: boolean }> {
  const target = storeTarget(opts.store);
  if (target.kind === 'sqlite') {
    if (opts.gateId !== undefined) throw new HomeError('--gate-id names a gate in a shared store: use it with --store postgres://…');
    return { ...initHome(dir, opts.key), target };
  }
  const gateId = opts.gateId;
  if (gateId === undefined) throw new HomeError('--store postgres://… needs --gate-id NAME (this gate\'s name in the shared store)');
  if (!GATE_ID.test(gateId)) throw new HomeError('--gate-id: letters, digits, . _ - (at most 64), starting with a letter or digit');
  const home = resolveHome(dir);
  if (existsSync(home.key) || existsSync(home.token)) {
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
    createGateKey(home, opts.key);
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
