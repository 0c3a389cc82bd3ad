// The append-only ledger over the store's ledger port. Appends happen inside a caller's
// `store.transact`, so a decision, its state changes and its entry commit together; the chain
// head is read inside that transaction, so two gates sharing one home still produce one
// contiguous chain.
import { canonicalize } from '../core/canonical.js';
import type { LedgerPort } from '../store/ports.js';
import type { GateKey } from './keys.js';
import { GENESIS_PREV, entryHash, signEntry, type Entry, type EntryFields } from './entry.js';

export interface ChainHead {
  seq: number;
  hash: string;
  ts: string;
}

export class Ledger {
  constructor(
    readonly port: LedgerPort,
    private readonly key: GateKey,
    private readonly clock: () => number = Date.now,
  ) {}

  head(): ChainHead | null {
    const h = this.port.head();
    return h ? { seq: h.seq, hash: h.hash, ts: h.ts } : null;
  }

  /** Append one entry. Call inside `store.transact` to commit it with its effects. */
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
    this.port.insert({ seq: entry.seq, ts: entry.ts, kind: entry.kind, hash: entryHash(entry), body: canonicalize(entry) });
    return entry;
  }
}

/** Entries in seq order from `fromSeq`, at most `limit`, as stored (not verified: see verify/). */
export function* readEntries(port: LedgerPort, fromSeq = 0, limit = Number.MAX_SAFE_INTEGER): Generator<Entry> {
  for (const body of port.bodies(fromSeq, limit)) yield JSON.parse(body) as Entry;
}
