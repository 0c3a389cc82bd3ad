// Opening a SQLite store the same way everywhere: WAL, full fsync on commit, a busy timeout so
// two gates on one home wait for each other instead of failing.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';

export type Db = Database.Database;

export class StoreError extends Error {}

export function openDb(path: string, opts: { create?: boolean } = {}): Db {
  if (!opts.create && !existsSync(path)) throw new StoreError(`database missing: ${path} (run cloakpipe init)`);
  let db: Db;
  try {
    db = new Database(path, { fileMustExist: !opts.create });
    // The busy timeout first: switching to WAL needs a lock that another gate (or one closing
    // and checkpointing) may hold for a moment.
    db.pragma('busy_timeout = 10000');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
  } catch (e) {
    throw new StoreError(`cannot open database ${path}: ${(e as { code?: string }).code ?? 'error'}`);
  }
  return db;
}
