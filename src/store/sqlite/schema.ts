// Every table of the gate's two SQLite files, in one place, so `init`, the gate and the CLI agree.
// ledger.db: entries, anchors, rate_calls. operations.db: meta, operations, used_receipts, pins,
// approval_requests and offered_receipts (the approval inbox, ADR 033); those the PostgreSQL store
// keeps alike are described once, in ../tables.ts.
// `ensure*` creates what is missing (tables added in later versions appear in older homes);
// `missing*` names what a database that should be the gate's lacks (start-up refuses it).
import type { Db } from './db.js';
import { APPROVAL_REQUESTS, OFFERED_RECEIPTS, OPERATIONS, PINS, USED_RECEIPTS, type Table } from '../tables.js';
import { migrateRates } from './rates.js';
import { StoreError } from '../ports.js';

/**
 * The schema version this cloakpipe writes, in each file's PRAGMA user_version (0: a home made
 * before files carried one, read as this version). A newer file may mean something else by the
 * same tables: it is refused before anything reads or writes it, never migrated down.
 */
export const SQLITE_SCHEMA_VERSION = 1;

/** Refuses a file of a schema version this cloakpipe does not know; call before any write. */
export function refuseUnknownVersion(db: Db, which: string, path: string, s = 'main'): void {
  const v = db.pragma(`${s}.user_version`, { simple: true }) as number;
  if (v >= 0 && v <= SQLITE_SCHEMA_VERSION) return;
  throw new StoreError(
    v > SQLITE_SCHEMA_VERSION
      ? `${which} database ${path} is at schema version ${v}, newer than this cloakpipe (${SQLITE_SCHEMA_VERSION}): upgrade cloakpipe to use this home; it was neither read nor changed`
      : `${which} database ${path} has schema version ${v}, which no cloakpipe writes: it was neither read nor changed; restore it from a backup`,
  );
}

/** Records this cloakpipe's schema version in a file that carries none yet (a new or older home). */
export function stampVersion(db: Db, s = 'main'): void {
  if ((db.pragma(`${s}.user_version`, { simple: true }) as number) === 0) db.pragma(`${s}.user_version = ${SQLITE_SCHEMA_VERSION}`);
}

export function ensureLedgerSchema(db: Db, s = 'main'): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS ${s}.entries (
      seq INTEGER PRIMARY KEY,
      ts TEXT NOT NULL,
      kind TEXT NOT NULL,
      hash TEXT NOT NULL,
      body TEXT NOT NULL
    ) STRICT;
    CREATE TABLE IF NOT EXISTS ${s}.anchors (
      epoch_seq INTEGER NOT NULL,
      kind TEXT NOT NULL,
      data TEXT NOT NULL,
      PRIMARY KEY (epoch_seq, kind)
    ) STRICT;
    CREATE TABLE IF NOT EXISTS ${s}.rate_calls (
      task_id TEXT NOT NULL,
      tool    TEXT NOT NULL,
      at_ms   INTEGER NOT NULL,
      n_tool  INTEGER NOT NULL DEFAULT 0,
      n_all   INTEGER NOT NULL DEFAULT 0
    );
  `);
  migrateRates(db, s);
  db.exec(`
    CREATE INDEX IF NOT EXISTS ${s}.rate_calls_tool_n ON rate_calls (task_id, tool, at_ms, n_tool);
    CREATE INDEX IF NOT EXISTS ${s}.rate_calls_task_n ON rate_calls (task_id, at_ms, n_all);
    CREATE INDEX IF NOT EXISTS ${s}.rate_calls_at ON rate_calls (at_ms);
  `);
}

export function ensureOperationsSchema(db: Db, s = 'main'): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS ${s}.meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT;
    ${create(OPERATIONS, s)}
    CREATE INDEX IF NOT EXISTS ${s}.operations_state ON operations (state);
    ${[USED_RECEIPTS, PINS, APPROVAL_REQUESTS, OFFERED_RECEIPTS].map((t) => create(t, s)).join('\n')}
  `);
}

/** A table both stores keep (../tables.ts) as SQLite has it: STRICT, created where missing. */
function create(t: Table, s: string): string {
  const indexes = Object.entries(t.indexes ?? {}).map(([name, columns]) => `CREATE INDEX IF NOT EXISTS ${s}.${name} ON ${t.name} (${columns});`);
  return [`CREATE TABLE IF NOT EXISTS ${s}.${t.name} (${t.columns.replaceAll('INT64', 'INTEGER')}\n) STRICT;`, ...indexes].join('\n');
}

/** Tables every home since the first release has: their absence means "not the gate's database". */
const CORE_TABLES = { ledger: ['entries'], operations: ['operations', 'used_receipts'] } as const;

export function missingTables(db: Db, which: keyof typeof CORE_TABLES, s = 'main'): string[] {
  const have = new Set((db.prepare(`SELECT name FROM ${s}.sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((r) => r.name));
  return CORE_TABLES[which].filter((t) => !have.has(t));
}

/**
 * PRAGMA integrity_check of one schema: null when it holds, else the first problem SQLite names.
 * Not quick_check alone: quick_check skips whether each index holds what its table holds, and a
 * damaged key in the operations index makes the lookup of a succeeded operation miss (its write
 * would run again) while quick_check says ok. The entries table has no index, so on a large
 * ledger this costs what quick_check costs.
 */
export function integrityCheck(db: Db, s = 'main'): string | null {
  const rows = db.prepare(`PRAGMA ${s}.integrity_check(8)`).all() as { integrity_check: string }[];
  if (rows.length === 1 && rows[0].integrity_check === 'ok') return null;
  return rows.map((r) => r.integrity_check).join('; ') || 'no answer';
}
