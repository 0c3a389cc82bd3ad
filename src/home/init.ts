// Creating a gate home (`cloakpipe init`). Never overwrites a key, and never creates one beside
// an existing ledger or operations database: a new key would orphan the ledger the old one
// signed (and start-up refuses a ledger its key did not sign). Every file it creates is 0600,
// the home and its inbox 0700. An init that cannot finish (a full disk, a folder it may not
// write) removes the files and folders it created: a key left without its ledger would make every later
// init refuse to overwrite it.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { resolveHome, type HomePaths } from '../store/home.js';
import { finishSqliteStore, openSqliteStore } from '../store/sqlite/store.js';
import { initPostgresStore, registeredGates } from '../store/postgres/store.js';
import { StoreError } from '../store/ports.js';
import { GATE_ID, storeTarget, type StoreTarget } from '../store/target.js';
import { generateGateKeyPem } from '../ledger/keys.js';
import { openTokenSigner, TokenError, type KeyChoice } from '../keys/token.js';
import type { Pkcs11Signer } from '../keys/pkcs11.js';
import { HomeError, checkHomeDir } from './open.js';

/** A pair a token generated for this init: discarded when the home is not made, else closed. */
type MadeInToken = Pkcs11Signer | undefined;

/**
 * The gate key of a new home: a fresh key file (gate.key), or with `--key pkcs11:…` the token's
 * key, generated inside the token when it holds none; the home then records the URI (gate.token)
 * and the public key only. Returns whether a token generated the pair, and that pair's signer,
 * open: the caller closes it once the home is made, or discards the pair (discardCreated()).
 */
function createGateKey(home: HomePaths, key: KeyChoice | undefined, made: string[] = []): { generated: boolean; inToken: MadeInToken } {
  if (key?.uri === undefined) {
    if (key?.pinFile !== undefined) throw new HomeError('--pin-file goes with --key pkcs11:…');
    const { privatePem, publicPem } = generateGateKeyPem();
    writePrivate(home.key, privatePem, made);
    writePrivate(home.pub, publicPem, made);
    return { generated: true, inToken: undefined };
  }
  let signer;
  try {
    signer = openTokenSigner(key.uri, key.pinFile, { create: true });
  } catch (e) {
    if (e instanceof TokenError) throw new HomeError(`gate key: ${e.message}`);
    throw e;
  }
  try {
    writePrivate(home.token, key.uri + '\n', made);
    writePrivate(home.pub, signer.publicKey.export({ type: 'spki', format: 'pem' }).toString(), made);
  } catch (e) {
    discard(signer);
    throw e;
  }
  if (!signer.created) signer.close(); // a key found in the token is never removed
  return { generated: signer.created, inToken: signer.created ? signer : undefined };
}

/**
 * Removes the pair this init generated, its home not made: left in the token, the next init
 * would take it as a key already there (and say it may be another home's). A token that will
 * not remove it is said, the init's own failure is the one thrown.
 */
function discard(inToken: MadeInToken): void {
  if (inToken === undefined) return;
  try {
    inToken.discardCreated();
  } catch (e) {
    process.stderr.write(`cloakpipe init: ${(e as Error).message}\n`);
  } finally {
    inToken.close();
  }
}

/** Creates `path` (never over an existing file), 0600; once created it is in `made`, even if its write then fails. */
function writePrivate(path: string, text: string, made: string[] = []): void {
  const fd = openSync(path, 'wx', 0o600);
  made.push(path);
  try {
    writeFileSync(fd, text);
  } finally {
    closeSync(fd);
  }
  chmodSync(path, 0o600);
}

function refuseExistingKey(home: HomePaths): void {
  for (const p of [home.key, home.token])
    if (existsSync(p))
      throw new HomeError(
        `${p} exists; refusing to overwrite a gate key` +
          // A fleet gate's home (gate-id) keeps its ledger in the shared store, not here.
          (existsSync(home.ledger) || existsSync(home.gateId) ? '' : ` (the home has no ${home.ledger}: if an init was killed before it finished, move the home away and run init again; if the ledger was removed, restore it)`),
      );
}

/** Every file SQLite may make for a database. */
const databaseFiles = (path: string) => [path, `${path}-wal`, `${path}-shm`, `${path}-journal`];

/**
 * Creates `dir` and its missing parents, 0700, and returns each folder it created, outermost
 * first (none when `dir` was there).
 */
function makeDir(dir: string): string[] {
  if (existsSync(dir)) return []; // a file there is checkHomeDir's to name
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return [];
  const made: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    made.unshift(d);
    if (d === resolve(first) || dirname(d) === d) return made;
  }
}

/**
 * Runs `create`, which pushes onto `made` each file or folder once it has created it (a folder
 * before what it holds); if `create` throws, removes them and throws a HomeError that says so:
 * an init that fails leaves nothing, not even the empty folders of a home it had begun. Only
 * what this run created is removed, and a folder only when empty: a second init racing on the
 * same home loses at the key's exclusive create and must not take the winner's files with it.
 */
function createOrUndo<T>(home: HomePaths, create: (made: string[]) => T, made: string[] = []): T {
  try {
    return create(made);
  } catch (e) {
    undo(made);
    if (e instanceof HomeError) throw e;
    const code = (e as { code?: unknown }).code;
    const message = (e as Error).message;
    throw new HomeError(`could not create the home ${home.dir}${typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}: ${message}; the files this init had made are removed`);
  }
}

/** Removes what an init made, newest first; a folder only when empty. */
function undo(made: string[]): void {
  for (const f of made.splice(0).reverse()) {
    try {
      rmSync(f, { force: true });
    } catch {
      try {
        rmdirSync(f); // a folder: removed only when empty
      } catch {
        // what it holds is not this run's
      }
    }
  }
}

/** A PostgreSQL failure as init names it (its code, never a value). */
function storeFailure(e: unknown, doing: string): HomeError {
  if (e instanceof HomeError) return e;
  if (e instanceof StoreError) return new HomeError(e.message);
  const code = (e as { code?: string }).code;
  return new HomeError(`the PostgreSQL store could not be ${doing}: ${code ? `PostgreSQL error ${code}` : (e as Error).message}`);
}

/**
 * The store is reached before init makes anything: one it cannot reach (or read) stops init
 * before a file, a folder or a token key is made. A store without the schema yet is reached.
 */
async function reachStore(target: { url: string; schema?: string }): Promise<void> {
  try {
    await registeredGates(target.url, target.schema);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === '42P01' || code === '3F000') return; // no schema yet: init makes it
    throw storeFailure(e, 'read');
  }
}

/**
 * After a refused registration: the pair this init generated is removed unless a gate of the
 * store holds it (another init that found it in the token registered it first, ADR 110's race),
 * or the store cannot say so; then it is left, and said (ADR 116).
 */
async function discardUnclaimed(inToken: MadeInToken, publicPem: string, target: { url: string; schema?: string }): Promise<void> {
  if (inToken === undefined) return;
  const mine = publicPem.replace(/\s+/g, '');
  let claimed: string | null;
  try {
    claimed = (await registeredGates(target.url, target.schema)).find((g) => g.public_key.replace(/\s+/g, '') === mine)?.gate_id ?? null;
  } catch {
    inToken.close();
    process.stderr.write(`cloakpipe init: the key pair this init made in token ${inToken.token} is left there (the store cannot say whether another gate took it); the next init with --key ${inToken.where} uses it\n`);
    return;
  }
  if (claimed === null) return discard(inToken);
  inToken.close();
}

export function initHome(dir?: string, key?: KeyChoice): HomePaths & { generated: boolean } {
  const home = resolveHome(dir);
  // An init killed after its key and before the end of its schema: this one completes it.
  if ((existsSync(home.key) || existsSync(home.token)) && existsSync(home.pub) && existsSync(home.ledger) && !existsSync(home.gateId)) {
    try {
      if (finishSqliteStore(home)) return { ...home, generated: false };
    } catch (e) {
      if (!(e instanceof StoreError)) throw e; // named below, as any existing home is
    }
  }
  refuseExistingKey(home);
  for (const [what, p] of [['ledger', home.ledger], ['operations', home.operations]] as const)
    if (existsSync(p))
      throw new HomeError(`${p} exists without its gate key; refusing to create a new key beside an existing ${what} database (restore the key, or move the home away)`);
  return createOrUndo(home, (made) => {
    const dirs = makeDir(home.dir);
    made.push(...dirs);
    if (dirs.length) chmodSync(home.dir, 0o700); // whatever the umask
    checkHomeDir(home);
    made.push(...makeDir(home.approvals));
    chmodSync(home.approvals, 0o700);
    const { generated, inToken } = createGateKey(home, key, made);
    try {
      // The key is ours (its exclusive create succeeded) and no database was there: what SQLite
      // makes now is this run's.
      made.push(...[...databaseFiles(home.ledger), ...databaseFiles(home.operations)].filter((f) => !existsSync(f)));
      openSqliteStore(home, { create: true }).close();
    } catch (e) {
      discard(inToken);
      throw e;
    }
    inToken?.close();
    return { ...home, generated };
  });
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
  const made: string[] = [];
  let generated: boolean | undefined;
  let inToken: MadeInToken;
  await reachStore(target);
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
    createOrUndo(
      home,
      (made) => {
        made.push(...makeDir(home.dir));
        chmodSync(home.dir, 0o700);
        checkHomeDir(home);
        made.push(...makeDir(home.approvals));
        chmodSync(home.approvals, 0o700);
        ({ generated, inToken } = createGateKey(home, opts.key, made));
        try {
          writePrivate(home.gateId, gateId + '\n', made);
        } catch (e) {
          discard(inToken);
          throw e;
        }
      },
      made,
    );
  }
  const publicPem = readFileSync(home.pub, 'utf8');
  try {
    await initPostgresStore({ url: target.url, gateId, publicKeyPem: publicPem, ...(target.schema ? { schema: target.schema } : {}) });
  } catch (e) {
    // Whatever stops the registration (a key another gate registered, ADR 106 and 110; a gate id
    // taken; the store gone since it was reached) removes the home this run made: left, it is a
    // gate the store never took, and every later init on it is refused as over a key.
    undo(made);
    await discardUnclaimed(inToken, publicPem, target);
    throw storeFailure(e, 'initialised');
  }
  inToken?.close();
  return { ...home, target, ...(generated !== undefined ? { generated } : {}) };
}
