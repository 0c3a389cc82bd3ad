// The append-only ledger in SQLite. Appends happen inside a caller's transaction, so a decision,
// its state changes and its entry commit together; the chain head is read inside that
// transaction, so two gates sharing one home still produce one contiguous chain. The head is read
// from the newest entry's signed body (never from the unsigned index columns beside it), and that
// entry must verify with this gate's key before the chain is continued.
import type { Db } from '../store/sqlite.js';
import { canonicalize } from '../core/canonical.js';
import type { GateKey } from './keys.js';
import { GENESIS_PREV, entryHash, parseStoredEntry, signEntry, storedHash, verifyEntrySignature, type Entry, type EntryFields } from './entry.js';

export interface ChainHead {
  seq: number;
  hash: string;
  ts: string;
}

export class LedgerError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'LedgerError';
  }
}

export class Ledger {
  private readonly headStmt;
  /** The head this process last read or wrote, by its exact bytes (saves re-verifying it). */
  private known: { body: string; head: ChainHead } | null = null;
  private readonly insertStmt;

  constructor(
    readonly db: Db,
    private readonly key: GateKey,
    private readonly clock: () => number = Date.now,
  ) {
    Ledger.initSchema(db);
    this.headStmt = db.prepare('SELECT body FROM entries ORDER BY seq DESC LIMIT 1');
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

  /** The chain head, from the newest entry's signed body; throws when it is not this key's. */
  head(): ChainHead | null {
    const row = this.headStmt.get() as { body: string } | undefined;
    if (!row) return null;
    if (this.known?.body === row.body) return this.known.head;
    let e: Entry;
    try {
      e = parseStoredEntry(row.body);
    } catch (err) {
      throw new LedgerError(`the newest ledger entry is unreadable: ${(err as Error).message}`);
    }
    if (!Number.isSafeInteger(e.seq) || typeof e.ts !== 'string' || !verifyEntrySignature(e, this.key.publicKey))
      throw new LedgerError(`the newest ledger entry (seq ${Number(e.seq)}) is not signed by this home's gate key`);
    const head = { seq: e.seq, ts: e.ts, hash: storedHash(row.body) };
    this.known = { body: row.body, head };
    return head;
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
    const body = canonicalize(entry);
    const hash = entryHash(entry);
    this.insertStmt.run(entry.seq, entry.ts, entry.kind, hash, body);
    // Only after the insert succeeded; a rolled-back transaction re-reads and re-verifies.
    this.known = { body, head: { seq: entry.seq, ts: entry.ts, hash } };
    return entry;
  }

  /** Append one entry in its own durable transaction. */
  append(fields: EntryFields): Entry {
    return this.db.transaction(() => this.appendInTx(fields)).immediate();
  }
}

export function* readEntries(db: Db, fromSeq = 0, limit = Number.MAX_SAFE_INTEGER): Generator<Entry> {
  const stmt = db.prepare('SELECT body FROM entries WHERE seq >= ? ORDER BY seq LIMIT ?');
  for (const row of stmt.iterate(fromSeq, limit) as Iterable<{ body: string }>) yield parseStoredEntry(row.body);
}
