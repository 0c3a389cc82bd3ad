// The ledger's entries and the epochs' anchors in ledger.db. Rows are appended inside the
// caller's transaction; the head is read inside it too, so two gates sharing one home still
// produce one contiguous chain (the seq primary key makes a lost race fail whole).
import type { Db } from './db.js';
import { storedHash } from '../../ledger/entry.js';
import { StoreError, type AnchorRow, type AnchorsPort, type LedgerPort, type LedgerRow, type LedgerSnapshot, type StoredRow } from '../ports.js';

/**
 * A row whose stored bytes are not the UTF-8 they are read as. SQLite hands TEXT back as it was
 * stored, and the driver decodes bytes that are not UTF-8 to U+FFFD: an entry holding U+FFFD (a
 * tool name the gate refused) could be stored as other bytes, which SQLite's JSON functions and
 * any byte-wise reader read as another value, and still verify. Readers of the evidence get
 * this error instead of the lenient reading.
 */
export class StoredBytesError extends StoreError {
  constructor(readonly seq: number) {
    super(`ledger entry ${seq} is stored as bytes that are not UTF-8, not as the text that was signed: the ledger was edited outside the gate`);
    this.name = 'StoredBytesError';
  }
}

/** Refuses `body` (row `seq`) when it reads as holding U+FFFD but its stored bytes are not its UTF-8. */
function checkStoredBytes(seq: number, body: string, storedBytes: (seq: number) => Buffer): void {
  // Only a body that reads as holding U+FFFD can have been decoded lossily: those (rare) are read
  // again as bytes, which must be the UTF-8 of the text.
  if (body.includes('\uFFFD') && !storedBytes(seq).equals(Buffer.from(body, 'utf8'))) throw new StoredBytesError(seq);
}

export class SqliteLedger implements LedgerPort {
  private readonly stmts;

  constructor(db: Db, s = 'main') {
    this.stmts = {
      head: db.prepare(`SELECT seq, ts, kind, hash, body FROM ${s}.entries ORDER BY seq DESC LIMIT 1`),
      insert: db.prepare(`INSERT INTO ${s}.entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)`),
      count: db.prepare(`SELECT COUNT(*) AS n FROM ${s}.entries`),
      bodies: db.prepare(`SELECT body FROM ${s}.entries WHERE seq >= ? ORDER BY seq LIMIT ?`),
      between: db.prepare(`SELECT seq, body FROM ${s}.entries WHERE seq >= ? AND seq <= ? ORDER BY seq`),
      lastOfKind: db.prepare(`SELECT seq, ts, kind, hash, body FROM ${s}.entries WHERE kind = ? ORDER BY seq DESC LIMIT 1`),
      storedBytes: db.prepare(`SELECT CAST(body AS BLOB) FROM ${s}.entries WHERE seq = ?`).pluck(),
    };
  }

  /** The newest row, read as strictly as verify reads it: the start-up check trusts what it signs. */
  head(): LedgerRow | null {
    return this.strict((this.stmts.head.get() as LedgerRow | undefined) ?? null);
  }

  private strict(row: LedgerRow | null): LedgerRow | null {
    if (row) checkStoredBytes(row.seq, row.body, (seq) => this.stmts.storedBytes.get(seq) as Buffer);
    return row;
  }

  insert(r: LedgerRow): void {
    this.stmts.insert.run(r.seq, r.ts, r.kind, r.hash, r.body);
  }

  count(): number {
    return (this.stmts.count.get() as { n: number }).n;
  }

  *bodies(fromSeq: number, limit: number): Iterable<string> {
    for (const row of this.stmts.bodies.iterate(fromSeq, limit) as Iterable<{ body: string }>) yield row.body;
  }

  between(first: number, last: number): Iterable<{ seq: number; body: string }> {
    return this.stmts.between.iterate(first, last) as Iterable<{ seq: number; body: string }>;
  }

  lastOfKind(kind: string): LedgerRow | null {
    return this.strict((this.stmts.lastOfKind.get(kind) as LedgerRow | undefined) ?? null);
  }
}

export class SqliteAnchors implements AnchorsPort {
  private readonly stmts;

  constructor(db: Db, s = 'main') {
    this.stmts = {
      put: db.prepare(`INSERT OR REPLACE INTO ${s}.anchors (epoch_seq, kind, data) VALUES (?, ?, ?)`),
      kinds: db.prepare(`SELECT kind FROM ${s}.anchors WHERE epoch_seq = ?`),
      all: db.prepare(`SELECT epoch_seq AS epoch, kind, data FROM ${s}.anchors ORDER BY epoch_seq, kind`),
    };
  }

  put(a: AnchorRow): void {
    this.stmts.put.run(a.epoch, a.kind, a.data);
  }

  kinds(epoch: number): Set<string> {
    return new Set((this.stmts.kinds.all(epoch) as { kind: string }[]).map((r) => r.kind));
  }

  all(): Iterable<AnchorRow> {
    return this.stmts.all.iterate() as Iterable<AnchorRow>;
  }
}

function hasTable(db: Db, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * One read transaction over a ledger database, opened read-only and never created or migrated:
 * export and verify read what is there, damaged or not. Tables that are missing read as empty.
 */
export function ledgerSnapshot(db: Db): LedgerSnapshot {
  db.exec('BEGIN'); // one read snapshot for entries and anchors
  const entries = hasTable(db, 'entries');
  const anchors = hasTable(db, 'anchors');
  // Counted when first asked (a scan of every row; verify's workers, reading ranges, never ask):
  // the same in any order, since every read here is of the one snapshot.
  let counted: number | undefined;
  let stored: ReturnType<Db['prepare']> | undefined;
  const count = () => (counted ??= entries ? (db.prepare('SELECT COUNT(*) AS n FROM entries').get() as { n: number }).n : 0);
  // Without `fromSeq`, every row from the lowest key: a row stored below 0 is read (and
  // refused by verify) like any other, never skipped as if it were not there.
  // No lower bound at all without `fromSeq`: a row under -(2^53 - 1) (down to -2^63) was skipped,
  // and a ledger holding one extra row there verified.
  function* rows(fromSeq: number | undefined, limit: number, columns: boolean): Generator<StoredRow> {
    if (!entries) return;
    const what = columns ? 'seq, ts, kind, hash, body' : 'seq, body';
    const read = (
      fromSeq === undefined
        ? db.prepare(`SELECT ${what} FROM entries ORDER BY seq LIMIT ?`).iterate(limit)
        : db.prepare(`SELECT ${what} FROM entries WHERE seq >= ? ORDER BY seq LIMIT ?`).iterate(fromSeq, limit)
    ) as Iterable<StoredRow>;
    for (const row of read) {
      checkStoredBytes(row.seq, row.body, (seq) => (stored ??= db.prepare('SELECT CAST(body AS BLOB) FROM entries WHERE seq = ?').pluck()).get(seq) as Buffer);
      yield row;
    }
  }
  return {
    get total() {
      return count();
    },
    *bodies(fromSeq?: number, limit = Number.MAX_SAFE_INTEGER) {
      for (const row of rows(fromSeq, limit, false)) yield row.body;
    },
    rows: (fromSeq?: number, limit = Number.MAX_SAFE_INTEGER) => rows(fromSeq, limit, true),
    *keys() {
      if (!entries) return;
      yield* db.prepare('SELECT seq FROM entries ORDER BY seq').pluck().iterate() as Iterable<number>; // the rows bodies() reads
    },
    span() {
      if (!entries) return { first: 0, count: 0 };
      // Distinct keys from lo to hi, hi - lo + 1 of them: no gap. Each a B-tree edge, no scan.
      const r = db.prepare('SELECT (SELECT seq FROM entries ORDER BY seq LIMIT 1) AS lo, (SELECT seq FROM entries ORDER BY seq DESC LIMIT 1) AS hi').get() as {
        lo: number | null;
        hi: number | null;
      };
      if (r.lo === null || r.hi === null) return count() === 0 ? { first: 0, count: 0 } : null;
      return r.hi - r.lo + 1 === count() ? { first: r.lo, count: count() } : null;
    },
    *anchors() {
      if (!anchors) return;
      yield* db.prepare('SELECT epoch_seq AS epoch, kind, data FROM anchors ORDER BY epoch_seq, kind').iterate() as Iterable<AnchorRow>;
    },
    anchorCount() {
      return anchors ? (db.prepare('SELECT COUNT(*) AS n FROM anchors').get() as { n: number }).n : 0;
    },
    editedRow() {
      if (!entries) return null;
      db.function('cloakpipe_stored_hash', { deterministic: true }, (body: unknown) => (typeof body === 'string' ? storedHash(body) : null));
      // A body that is not JSON is verify's to name as the entry it is; here it compares as NULL.
      const r = db
        .prepare(
          `WITH b AS (SELECT seq, ts, kind, hash, body, CASE WHEN json_valid(body) THEN json_extract(body, '$.seq') END AS bseq,
             CASE WHEN json_valid(body) THEN json_extract(body, '$.ts') END AS bts, CASE WHEN json_valid(body) THEN json_extract(body, '$.kind') END AS bkind FROM entries)
           SELECT seq, seq IS NOT bseq AS seq_edited, ts IS NOT bts AS ts_edited, kind IS NOT bkind AS kind_edited, hash IS NOT cloakpipe_stored_hash(body) AS hash_edited FROM b
           WHERE seq IS NOT bseq OR ts IS NOT bts OR kind IS NOT bkind OR hash IS NOT cloakpipe_stored_hash(body) ORDER BY seq LIMIT 1`,
        )
        .get() as Record<string, number> | undefined;
      if (!r) return null;
      return { seq: r.seq, columns: (['seq', 'ts', 'kind', 'hash'] as const).filter((c) => r[`${c}_edited`] === 1) };
    },
    close() {
      try {
        if (db.inTransaction) db.exec('COMMIT');
      } finally {
        db.close();
      }
    },
  };
}
