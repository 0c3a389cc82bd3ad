import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb, type Db } from '../../src/store/sqlite.js';
import { attachOperations } from '../../src/operations/store.js';

export function tempDir(prefix = 'cp-ops-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A connection like the gate's: ledger.db with operations.db attached as `ops`. */
export function gateLikeDb(dir = tempDir()): { db: Db; dir: string } {
  const ops = new Database(join(dir, 'operations.db'));
  ops.pragma('journal_mode = WAL');
  ops.close();
  const db = openDb(join(dir, 'ledger.db'), { create: true });
  attachOperations(db, join(dir, 'operations.db'), 'ops');
  return { db, dir };
}
