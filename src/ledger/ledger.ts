// The append-only ledger in SQLite. Appends happen inside a caller's transaction, so a decision,
// its state changes and its entry commit together; the chain head is read inside that
// transaction, so two gates sharing one home still produce one contiguous chain.
import type { Db } from '../store/sqlite.js';
import { canonicalize } from '../core/canonical.js';
import type { GateKey } from './keys.js';
import { GENESIS_PREV, entryHash, signEntry, type Entry, type EntryFields } from './entry.js';

export interface ChainHead {
  seq: number;
  hash: string;
  ts: string;
}

export class Ledger {
  private readonly headStmt;
  private readonly insertStmt;

  constructor(
    readonly db: Db,
    private readonly key: GateKey,
    private readonly clock: () => number = Date.now,
  ) {
    Ledger.initSchema(db);
    this.headStmt = db.prepare('SELECT seq, hash, ts FROM entries ORDER BY seq DESC LIMIT 1');
    this.insertStmt = db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)');
  }

  static initSchema(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS entries (
      seq INTEGER PRIMARY KEY,
      ts TEXT NOT NULL,
      kind TEXT NOT NULL,
      hash TEXT NOT NULL,
      body TEXT NOT NULL
    ) STRICT`);
  }

  head(): ChainHead | null {
    return (this.headStmt.get() as ChainHead | undefined) ?? null;
  }

  /** Append one entry. Call inside a transaction (db.transaction) to commit it with its effects. */
  appendInTx(fields: EntryFields): Entry {
    const head = this.head();
    // Time never goes backwards in the chain, even if the clock does or another gate is ahead.
    let now = new Date(this.clock()).toISOString();
    if (head && now < head.ts) now = head.ts;
    const { kind, ...rest } = fields;
    const entry = signEntry(
      { ...rest, v: 1, seq: head ? head.seq + 1 : 0, ts: now, prev: head ? head.hash : GENESIS_PREV, kind },
      this.key.privateKey,
    );
    const hash = entryHash(entry);
    this.insertStmt.run(entry.seq, entry.ts, entry.kind, hash, canonicalize(entry));
    return entry;
  }

  /** Append one entry in its own durable transaction. */
  append(fields: EntryFields): Entry {
    return this.db.transaction(() => this.appendInTx(fields)).immediate();
  }
}

export function* readEntries(db: Db, fromSeq = 0, limit = Number.MAX_SAFE_INTEGER): Generator<Entry> {
  const stmt = db.prepare('SELECT body FROM entries WHERE seq >= ? ORDER BY seq LIMIT ?');
  for (const row of stmt.iterate(fromSeq, limit) as Iterable<{ body: string }>) yield JSON.parse(row.body) as Entry;
}
