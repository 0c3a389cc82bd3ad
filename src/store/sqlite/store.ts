// The SQLite store: ledger.db with operations.db ATTACHed as `ops` on one connection, so a
// decision, its effects and its entry commit in one transaction (ADR 002), with group commit.
// Opening an existing home refuses (StoreError, named) a file that is not the gate's: missing,
// empty or foreign (no schema), or failing PRAGMA integrity_check (schema.ts says why not quick_check). A missing database is never
// silently re-created: a new ledger would verify from seq 0, and a new operations database
// would let a write that already succeeded run again.
import { closeSync, existsSync, openSync, statSync } from 'node:fs';
import { attachDb, openDb, type Db } from './db.js';
import { ensureLedgerSchema, ensureOperationsSchema, missingTables, integrityCheck, refuseUnknownVersion, stampVersion } from './schema.js';
import { GroupCommit } from './group-commit.js';
import { SqliteOperations, SqliteReceipts } from './operations.js';
import { SqliteLedger, SqliteAnchors, ledgerSnapshot } from './ledger.js';
import { SqlitePins } from './pins.js';
import { SqliteApprovalRequests } from './approvals.js';
import { SqliteRates } from './rates.js';
import { StoreError, type LedgerSnapshot, type OperationsPort, type Store } from '../ports.js';

/** The SQLite store, with its connection for what only SQLite has (benchmarks, maintenance). */
export interface SqliteStore extends Store {
  readonly db: Db;
}

export interface SqlitePaths {
  ledger: string;
  operations: string;
}

const OPS = 'ops';

function refuseDamaged(which: 'ledger' | 'operations', path: string, db: Db, schema: string): void {
  refuseUnknownVersion(db, which, path, schema);
  const missing = missingTables(db, which, schema);
  if (missing.length > 0)
    throw new StoreError(
      `${which} database ${path} does not hold the gate's schema (no table ${missing.join(', ')}): an empty or foreign file is refused, never re-created; restore it from a backup`,
    );
  const problem = integrityCheck(db, schema);
  if (problem !== null) throw new StoreError(`${which} database ${path} is damaged (PRAGMA integrity_check: ${problem.slice(0, 200)}); restore it from a backup`);
}

/** A new database file that only its owner can read (SQLite gives its -wal and -shm the same mode). */
function createPrivate(path: string): void {
  closeSync(openSync(path, 'wx', 0o600));
}

interface FileId {
  path: string;
  what: string;
  dev: number;
  ino: number;
}

function fileId(path: string, what: string): FileId {
  const st = statSync(path);
  return { path, what, dev: st.dev, ino: st.ino };
}

/**
 * Opens the store of a home. `create` makes both databases (they must not exist yet: `init`);
 * otherwise both must exist and pass the checks above.
 */
export function openSqliteStore(paths: SqlitePaths, opts: { create?: boolean } = {}): SqliteStore {
  if (opts.create) {
    createPrivate(paths.ledger);
    createPrivate(paths.operations);
  } else {
    // Named before anything is opened, so the message says which file is missing.
    for (const [what, p] of [['ledger', paths.ledger], ['operations', paths.operations]] as const) {
      try {
        statSync(p);
      } catch {
        throw new StoreError(`${what} database missing: ${p} (run cloakpipe init)`);
      }
    }
  }
  const check = opts.create ? undefined : (db: Db) => refuseDamaged('ledger', paths.ledger, db, 'main');
  const db = openDb(paths.ledger, { create: opts.create, check });
  try {
    attachDb(db, paths.operations, OPS, opts.create ? undefined : (d) => refuseDamaged('operations', paths.operations, d, OPS));
    ensureLedgerSchema(db, 'main'); // tables added since the home was made
    ensureOperationsSchema(db, OPS);
    stampVersion(db, 'main');
    stampVersion(db, OPS);
    // operations.db holds argument values (approval requests, ADR 058): a row deleted is zeroed
    // on its pages, free ones too, instead of left in the file's free space for good.
    db.pragma(`${OPS}.secure_delete = ON`);
  } catch (e) {
    db.close();
    throw e;
  }
  return sqliteStore(db, [fileId(paths.ledger, 'ledger'), fileId(paths.operations, 'operations')]);
}

/**
 * `init` again on a home an earlier init left unfinished (killed between its files and the end of
 * the schema): the ledger holds no entry and a database lacks tables of the gate's schema. Their
 * schema is completed (a database not made yet is made) and true returned. A home that holds its
 * schema, or any entry, is not touched (false): it is no unfinished init's.
 */
export function finishSqliteStore(paths: SqlitePaths): boolean {
  const db = openDb(paths.ledger, { check: (d) => refuseUnknownVersion(d, 'ledger', paths.ledger, 'main') });
  try {
    if (!existsSync(paths.operations)) createPrivate(paths.operations);
    attachDb(db, paths.operations, OPS, (d) => refuseUnknownVersion(d, 'operations', paths.operations, OPS));
    const missing = [...missingTables(db, 'ledger', 'main'), ...missingTables(db, 'operations', OPS)];
    const entries = missingTables(db, 'ledger', 'main').includes('entries') ? 0 : (db.prepare('SELECT COUNT(*) AS n FROM main.entries').get() as { n: number }).n;
    if (missing.length === 0 || entries > 0) return false;
    ensureLedgerSchema(db, 'main');
    ensureOperationsSchema(db, OPS);
    stampVersion(db, 'main');
    stampVersion(db, OPS);
    return true;
  } finally {
    db.close();
  }
}

/** The ports over an open connection (ledger schema `main`, operations schema `ops`). */
export function sqliteStore(db: Db, files: FileId[] = []): SqliteStore {
  const assertIntact = () => {
    for (const f of files) {
      let now: FileId;
      try {
        now = fileId(f.path, f.what);
      } catch {
        throw new StoreError(`the ${f.what} database ${f.path} was deleted under the running gate`);
      }
      if (now.ino !== f.ino || now.dev !== f.dev) throw new StoreError(`the ${f.what} database ${f.path} was replaced under the running gate`);
    }
  };
  const commit = new GroupCommit(db, 256, assertIntact);
  const rates = new SqliteRates(db);
  commit.enlist(rates.participant());
  return {
    db,
    ledger: new SqliteLedger(db, 'main'),
    operations: new SqliteOperations(db, OPS),
    receipts: new SqliteReceipts(db, OPS),
    approvalRequests: new SqliteApprovalRequests(db, OPS),
    rates,
    pins: new SqlitePins(db, OPS),
    anchors: new SqliteAnchors(db, 'main'),
    transact: (fn) => commit.run(fn),
    transactLater: (fn) => commit.runLater(fn),
    assertIntact,
    enlist: (p) => commit.enlist(p),
    close: () => db.close(),
  };
}

/** A read-only, consistent view of a ledger database as it is (for export and verify). */
export function openLedgerSnapshot(path: string): LedgerSnapshot {
  return ledgerSnapshot(openDb(path, { readOnly: true, check: (db) => refuseUnknownVersion(db, 'ledger', path) }));
}

/**
 * The operations of a home, read-only (reports, ops list and show): never created, migrated or
 * locked for writing, so reading a running gate's store changes nothing. A missing file, or one
 * without the operations table, is a StoreError naming it.
 */
export function openOperationsReader(path: string): { operations: OperationsPort; close(): void } {
  const db = openDb(path, { readOnly: true, check: (d) => refuseUnknownVersion(d, 'operations', path) });
  try {
    if (missingTables(db, 'operations').includes('operations'))
      throw new StoreError(`operations database ${path} does not hold the gate's schema (no table operations)`);
    return { operations: new SqliteOperations(db, 'main'), close: () => db.close() };
  } catch (e) {
    db.close();
    throw e;
  }
}
