// Opening a gate home: the one way the gate and every CLI command get at the key, the store and
// the ledger. Refuses (HomeError, named; the CLI exits 2) a home the gate cannot trust to be its
// own, before anything reads or writes it:
// - a home directory or gate key that others can read (the key signs the evidence);
// - a database that is missing, empty, foreign or damaged (store/sqlite: a re-created database
//   would let a write that already succeeded run again and start a new ledger that verifies);
// - a ledger whose newest entry the home's key did not sign (gate.key replaced, or `init` run
//   again after the key was lost): appending would fork the evidence under another key.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolveHome, type HomePaths } from '../store/home.js';
import type { LedgerSnapshot, Store } from '../store/ports.js';
import { openLedgerSnapshot, openSqliteStore } from '../store/sqlite/store.js';
import { storeTarget } from '../store/target.js';
import { loadGateKey, loadPublicKey, type GateKey } from '../ledger/keys.js';
import { OtherKeyError, openTokenSigner, TokenError, type KeyChoice } from '../keys/token.js';
import { Ledger, LedgerError } from '../ledger/ledger.js';
import { chainSealer } from '../ledger/seal.js';

/** The signing thread's script (ADR 042). */
export const SIGNING_THREAD = new URL('../keys/signing-thread.js', import.meta.url);

export class HomeError extends Error {}

/** The PostgreSQL store and its driver, loaded only by a command that opens one. */
const postgres = () => import('../store/postgres/store.js');

export interface OpenedHome {
  paths: HomePaths;
  key: GateKey;
  store: Store;
  ledger: Ledger;
  close(): void;
}

/** The home directory must be private to its owner (0700). */
export function checkHomeDir(paths: HomePaths): void {
  let mode: number;
  try {
    const st = statSync(paths.dir);
    if (!st.isDirectory()) throw new HomeError(`home ${paths.dir} is not a directory`);
    mode = st.mode;
  } catch (e) {
    if (e instanceof HomeError) throw e;
    throw new HomeError(`no gate home at ${paths.dir} (run cloakpipe init)`);
  }
  if ((mode & 0o077) !== 0)
    throw new HomeError(`home ${paths.dir} is readable by others (mode ${(mode & 0o777).toString(8).padStart(4, '0')}; it must be 0700: chmod 700 it)`);
}

/** Where the home's gate key is: a token (--key pkcs11:…, or the URI init recorded), else gate.key. */
export interface KeyOptions {
  key?: KeyChoice;
  /** Told when a token goes away and comes back while running. */
  log?: (line: string) => void;
}

/**
 * The home's gate key as a Signer. A token key must be this home's: its public key is gate.pub
 * (the key that signed the ledger); a file key and a token key never mix in one home.
 */
export function openGateKey(paths: HomePaths, opts: KeyOptions = {}): GateKey {
  const recorded = existsSync(paths.token) ? readFileSync(paths.token, 'utf8').trim() : undefined;
  const uri = opts.key?.uri ?? recorded;
  if (uri === undefined) {
    if (opts.key?.pinFile !== undefined) throw new HomeError('--pin-file goes with a key in a token (--key pkcs11:…, or a home made by init --key)');
    const file = loadGateKey(paths.key);
    // As for a token key: the key that signs is the one gate.pub names (a key file copied over
    // from another home, or a wrong backup restored, would sign a chain verify never accepts).
    if (existsSync(paths.pub) && !loadPublicKey(paths.pub).equals(file.publicKey))
      throw new HomeError(`the gate key ${paths.key} is not the key of this home's ${paths.pub}: restore the key init made`);
    return file;
  }
  if (existsSync(paths.key)) throw new HomeError(`this home's gate key is the file ${paths.key}, not a key in a token`);
  let pub;
  try {
    pub = loadPublicKey(paths.pub);
  } catch (e) {
    throw new HomeError(`${(e as Error).message}: the home records no public key for its token key`);
  }
  const notOurs = (why: string) => new HomeError(`the key ${uri} is not this home's gate key (${paths.pub}): name the token key init recorded${why}`);
  let signer;
  try {
    // gate.pub before the token: a token showing another key is refused before its PIN is tried.
    signer = openTokenSigner(uri, opts.key?.pinFile, { log: opts.log, expect: pub });
  } catch (e) {
    if (e instanceof OtherKeyError) throw notOurs(` (${e.message})`);
    if (e instanceof TokenError) throw new HomeError(`gate key: ${e.message}`);
    throw e;
  }
  if (!pub.equals(signer.publicKey)) {
    signer.close();
    throw notOurs('');
  }
  return signer;
}

export function openHome(opts: { home?: string; clock?: () => number } & KeyOptions = {}): OpenedHome {
  const paths = resolveHome(opts.home);
  checkHomeDir(paths);
  const key = openGateKey(paths, opts);
  let store;
  try {
    store = openSqliteStore(paths);
  } catch (e) {
    key.close();
    throw e;
  }
  const ledger = new Ledger(store.ledger, key, opts.clock);
  try {
    ledger.head(); // verifies the newest entry with this key
  } catch (e) {
    store.close();
    key.close();
    if (!(e instanceof LedgerError)) throw e;
    throw new HomeError(
      `${e.message} (${paths.key}): the key was replaced, or the ledger ${paths.ledger} is another home's; restore the key that signed it`,
    );
  }
  // A group's entries are signed as one run, off this thread when the key allows (ADR 042).
  const sealer = chainSealer(key, { thread: SIGNING_THREAD });
  store.enlist?.(ledger.participant(sealer));
  return { paths, key, store, ledger, close: () => (sealer?.close(), store.close(), key.close()) };
}

/**
 * A read-only, consistent view of a home's ledger as it is (show, export, verify): no checks and
 * no key, since reading a damaged or foreign ledger is exactly what an auditor does.
 */
export function openLedgerView(opts: { home?: string } = {}): LedgerSnapshot {
  return openLedgerSnapshot(resolveHome(opts.home).ledger);
}

/**
 * `openHome` for any store: the home's files (SQLite), or a fleet's PostgreSQL database named by
 * `store` (or CLOAKPIPE_STORE). On PostgreSQL the home holds the key and the gate's name
 * (`gate-id`); the store must have this name registered with this key, and the newest entry of
 * this gate's chain must be this key's.
 */
export async function openHomeWith(opts: { home?: string; store?: string; clock?: () => number } & KeyOptions = {}): Promise<OpenedHome> {
  const target = storeTarget(opts.store);
  if (target.kind === 'sqlite') return openHome(opts);
  const paths = resolveHome(opts.home);
  checkHomeDir(paths);
  const key = openGateKey(paths, opts);
  let gateId: string;
  try {
    gateId = readFileSync(paths.gateId, 'utf8').trim();
  } catch {
    key.close();
    throw new HomeError(`home ${paths.dir} has no gate id for a shared store (run cloakpipe init --store … --gate-id NAME)`);
  }
  const { openPostgresStore } = await postgres();
  const store = await openPostgresStore({ url: target.url, gateId, ...(target.schema ? { schema: target.schema } : {}), ...(target.timeoutMs ? { timeoutMs: target.timeoutMs } : {}) });
  const mine = key.publicKey.export({ type: 'spki', format: 'pem' }).toString().trim();
  if (store.registeredKey.trim() !== mine) {
    await store.end();
    key.close();
    throw new HomeError(`gate ${JSON.stringify(gateId)} is registered in the store with another key than ${paths.key}: restore that gate's key, or init a new gate id`);
  }
  const ledger = new Ledger(store.ledger, key, opts.clock);
  try {
    await store.transact(() => ledger.head());
  } catch (e) {
    await store.end();
    key.close();
    if (!(e instanceof LedgerError)) throw e;
    throw new HomeError(`${e.message} (${paths.key}): the chain of gate ${JSON.stringify(gateId)} was signed by another key`);
  }
  return { paths, key, store, ledger, close: () => (store.close(), key.close()) };
}

/** One gate's chain as a read command sees it, with the key it must verify with. */
export interface ChainView {
  /** The gate's name in a shared store; null for a home's own ledger (SQLite). */
  gateId: string | null;
  /** The key registered for the gate in the store, or the home's gate.pub (PEM); null when unreadable. */
  publicKeyPem: string | null;
  /** Where the key came from: a shared store's registration, or the home. */
  keyFrom: 'store' | 'home';
  snapshot: LedgerSnapshot;
}

function homeGateId(paths: HomePaths): string {
  try {
    return readFileSync(paths.gateId, 'utf8').trim();
  } catch {
    throw new HomeError(`home ${paths.dir} has no gate id for a shared store (run cloakpipe init --store … --gate-id NAME, or name the chain with --gate NAME)`);
  }
}

/**
 * The chains a read command (show, export, prove, checkpoint, verify, scope) reads, each in one
 * consistent snapshot: the home's ledger (SQLite), or in a shared store this home's gate's chain,
 * the chain of `gate`, or every registered gate's (`all`). A gate reads, never writes, here.
 */
export async function openChains(opts: { home?: string; store?: string; gate?: string; all?: boolean }): Promise<ChainView[]> {
  const target = storeTarget(opts.store);
  const paths = resolveHome(opts.home);
  if (target.kind === 'sqlite') {
    if (opts.gate !== undefined || opts.all) throw new HomeError('--gate and --all name chains in a shared store: give --store postgres://… (or CLOAKPIPE_STORE)');
    let pem: string | null = null;
    try {
      pem = readFileSync(paths.pub, 'utf8');
    } catch {
      pem = null;
    }
    return [{ gateId: null, publicKeyPem: pem, keyFrom: 'home', snapshot: openLedgerSnapshot(paths.ledger) }];
  }
  const { registeredGates, postgresLedgerSnapshot } = await postgres();
  const gates = await registeredGates(target.url, target.schema);
  let chosen: typeof gates;
  if (opts.all) chosen = gates;
  else {
    const name = opts.gate ?? homeGateId(paths);
    chosen = gates.filter((g) => g.gate_id === name);
    if (chosen.length === 0) throw new HomeError(`no gate ${JSON.stringify(name)} is registered in the store`);
  }
  const views: ChainView[] = [];
  for (const g of chosen)
    views.push({ gateId: g.gate_id, publicKeyPem: g.public_key, keyFrom: 'store', snapshot: await postgresLedgerSnapshot(target.url, g.gate_id, target.schema) });
  return views;
}

/** `openChains` for exactly one chain (no --all). */
export async function openChain(opts: { home?: string; store?: string; gate?: string }): Promise<ChainView> {
  return (await openChains(opts))[0];
}

