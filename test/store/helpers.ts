// SQLite databases laid out as the gate's, for tests that build ledgers and operations directly.
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { openDb, type Db } from '../../src/store/sqlite/db.js';
import { ensureLedgerSchema } from '../../src/store/sqlite/schema.js';
import { SqliteAnchors, SqliteLedger } from '../../src/store/sqlite/ledger.js';
import { openSqliteStore, openLedgerSnapshot } from '../../src/store/sqlite/store.js';
import type { LedgerSnapshot, Store } from '../../src/store/ports.js';

export function tempDir(prefix = 'cp-store-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A ledger database on its own (as verify and export read one), with its ports. */
export function ledgerDb(path: string, opts: { create?: boolean } = {}): { db: Db; ledger: SqliteLedger; anchors: SqliteAnchors } {
  const db = openDb(path, { create: opts.create });
  ensureLedgerSchema(db);
  return { db, ledger: new SqliteLedger(db), anchors: new SqliteAnchors(db) };
}

/** A fresh store in a new directory, as `init` makes it. */
export function freshStore(dir = tempDir()): { store: Store; dir: string; paths: { ledger: string; operations: string } } {
  const paths = { ledger: join(dir, 'ledger.db'), operations: join(dir, 'operations.db') };
  return { store: openSqliteStore(paths, { create: true }), dir, paths };
}

/** Reads a snapshot and closes it once `fn`'s promise settles. */
export async function withSnapshot<T>(path: string, fn: (s: LedgerSnapshot) => Promise<T>): Promise<T> {
  const s = openLedgerSnapshot(path);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

