// Opening a SQLite database the same way everywhere: WAL, full fsync on commit, a busy timeout
// so two gates on one home wait for each other instead of failing.
import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { StoreError } from '../ports.js';

export type Db = Database.Database;

/** WAL pages after which a commit checkpoints (ADR 066). */
export const WAL_CHECKPOINT_PAGES = 4_000;

export interface OpenOptions {
  create?: boolean;
  readOnly?: boolean;
  /** Runs before any pragma can write to the file; throws to refuse it. */
  check?: (db: Db) => void;
}

/**
 * Why a database could not be read: its bytes, or what is around them. A full disk or a file
 * the process may not open is not a damaged or replaced database, and saying it is would send an
 * operator after tampering that did not happen (and the other way round).
 */
function unreadable(path: string, e: unknown): StoreError {
  const code = (e as { code?: unknown }).code;
  const c = typeof code === 'string' ? code : 'error';
  if (c === 'SQLITE_FULL' || c.startsWith('SQLITE_IOERR')) return new StoreError(`cannot read ${path}: the file system failed (${c}: a full disk or an I/O error), the database was not judged`);
  if (c.startsWith('SQLITE_CANTOPEN') || c.startsWith('SQLITE_PERM') || c.startsWith('SQLITE_READONLY') || c.startsWith('SQLITE_AUTH'))
    return new StoreError(`cannot read ${path}: access refused (${c}), the database was not judged`);
  if (c.startsWith('SQLITE_BUSY') || c.startsWith('SQLITE_LOCKED')) return new StoreError(`cannot read ${path}: another process holds it locked (${c})`);
  if (c === 'SQLITE_NOMEM') return new StoreError(`cannot read ${path}: out of memory (${c})`);
  return new StoreError(`${path} is not a readable SQLite database (${c})`);
}

/**
 * A read-only connection to a WAL database with no WAL beside it (a closed home) creates an empty
 * -wal and -shm, and cannot delete them when it closes: every read left them in the home. SQLite's
 * own no-file read (`immutable=1`) needs a URI, which better-sqlite3 does not open. So, after
 * such a reader closes, an empty WAL (its own, or one a reader ended by a signal left) is closed
 * once more by a plain connection: as the last one (SQLite's own lock says so) it deletes both
 * files, with no frame to checkpoint into the database; while a gate has the database open, it
 * deletes nothing.
 */
function tidyOnClose(db: Db, path: string): void {
  const close = db.close.bind(db);
  db.close = () => {
    close();
    try {
      if (statSync(`${path}-wal`).size !== 0) return db; // frames a gate wrote meanwhile stay its own
      const rw = new Database(path, { fileMustExist: true });
      try {
        rw.pragma('busy_timeout = 1000');
        rw.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get();
      } finally {
        rw.close();
      }
    } catch {
      // No WAL, or no right to write here: what is left is SQLite's scratch, not evidence.
    }
    return db;
  };
}

export function openDb(path: string, opts: OpenOptions = {}): Db {
  if (!opts.create && !existsSync(path)) throw new StoreError(`database missing: ${path} (run cloakpipe init)`);
  let db: Db;
  try {
    // Read-only is opened so by SQLite, not only refused writes by query_only: the last
    // connection to close checkpoints a WAL left beside the file into it and deletes it, so
    // reading a home (verify, an export) would change the evidence it reads.
    db = new Database(path, { fileMustExist: !opts.create, readonly: !!opts.readOnly });
    if (opts.readOnly) tidyOnClose(db, path);
    // The busy timeout first: switching to WAL needs a lock that another gate (or one closing
    // and checkpointing) may hold for a moment.
    db.pragma('busy_timeout = 10000');
  } catch (e) {
    throw new StoreError(`cannot open database ${path}: ${(e as { code?: string }).code ?? 'error'}`);
  }
  if (opts.check) {
    try {
      opts.check(db);
    } catch (e) {
      db.close();
      if (e instanceof StoreError) throw e;
      throw unreadable(path, e);
    }
  }
  try {
    if (opts.readOnly) return db;
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    // A checkpoint runs inside the commit that crosses this many WAL pages (for every database
    // on the connection). At SQLite's 1,000 it ran every ~156 gated calls and set the p99 of a
    // lone call; at 4,000 it is out of the p99. Not more: until the first checkpoint every
    // commit extends the WAL, ~0.1 ms dearer, and every start pays that again (SQLite deletes
    // the WAL when the last connection closes; ADR 066).
    db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  } catch (e) {
    throw new StoreError(`cannot open database ${path}: ${(e as { code?: string }).code ?? 'error'}`);
  }
  return db;
}

/** Attach a second database file under `schema`, with the same durability settings. */
export function attachDb(db: Db, path: string, schema: string, check?: (db: Db) => void): void {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new StoreError(`invalid schema name ${schema}`);
  if (!existsSync(path)) throw new StoreError(`database missing: ${path} (run cloakpipe init)`);
  try {
    db.prepare(`ATTACH DATABASE ? AS ${schema}`).run(path);
  } catch (e) {
    throw new StoreError(`cannot attach database ${path}: ${(e as { code?: string }).code ?? 'error'}`);
  }
  if (check) {
    try {
      check(db);
    } catch (e) {
      if (e instanceof StoreError) throw e;
      throw unreadable(path, e);
    }
  }
  try {
    db.pragma(`${schema}.journal_mode = WAL`);
    db.pragma(`${schema}.synchronous = FULL`);
  } catch (e) {
    throw new StoreError(`cannot attach database ${path}: ${(e as { code?: string }).code ?? 'error'}`);
  }
}
