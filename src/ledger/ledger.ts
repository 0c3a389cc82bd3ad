// The append-only ledger over the store's ledger port. Appends happen inside a caller's
// `store.transact`, so a decision, its state changes and its entry commit together; the chain
// head is read inside that transaction, so two gates sharing one home still produce one
// contiguous chain. The head is read from the newest entry's signed body (never from the
// unsigned index columns beside it), and that entry must verify with this gate's key before the
// chain is continued.
import { canonicalize } from '../core/canonical.js';
import type { LedgerPort } from '../store/ports.js';
import type { GateKey } from './keys.js';
import { GENESIS_PREV, entryHash, parseStoredEntry, signEntry, storedHash, verifyEntrySignature, type Entry, type EntryBody, type EntryFields, type LedgerEntry } from './entry.js';

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
  /** The head this process last read or wrote, by its exact bytes (saves re-verifying it). */
  private known: { body: string; head: ChainHead } | null = null;

  constructor(
    readonly port: LedgerPort,
    private readonly key: GateKey,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The chain head, from the newest entry's signed body; throws when it is not this key's. */
  head(): ChainHead | null {
    const row = this.port.head();
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

  /** Append one entry. Call inside `store.transact` to commit it with its effects. */
  appendInTx(fields: EntryFields): LedgerEntry {
    const head = this.head();
    // Time never goes backwards in the chain, even if the clock does or another gate is ahead.
    let now = new Date(this.clock()).toISOString();
    if (head && now < head.ts) now = head.ts;
    const body = { ...fields, v: 1 as const, seq: head ? head.seq + 1 : 0, ts: now, prev: head ? head.hash : GENESIS_PREV };
    const entry = signEntry(body as unknown as EntryBody, this.key);
    const stored = canonicalize(entry);
    const hash = entryHash(entry);
    this.port.insert({ seq: entry.seq, ts: entry.ts, kind: entry.kind, hash, body: stored });
    // Only after the insert succeeded; a rolled-back transaction re-reads and re-verifies.
    this.known = { body: stored, head: { seq: entry.seq, ts: entry.ts, hash } };
    return entry as unknown as LedgerEntry;
  }
}

/** Entries in seq order from `fromSeq`, at most `limit`, parsed strictly (not verified: see verify/). */
export function* readEntries(port: LedgerPort, fromSeq = 0, limit = Number.MAX_SAFE_INTEGER): Generator<Entry> {
  for (const body of port.bodies(fromSeq, limit)) yield parseStoredEntry(body);
}

