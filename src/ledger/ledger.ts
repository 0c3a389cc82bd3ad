// The append-only ledger over the store's ledger port. Appends happen inside a caller's
// `store.transact`, so a decision, its state changes and its entry commit together; the chain
// head is read inside that transaction, so two gates sharing one home still produce one
// contiguous chain. The head is read from the newest entry's signed body (never from the
// unsigned index columns beside it), and that entry must verify with this gate's key before the
// chain is continued.
import type { GateKey } from './keys.js';
import { StoreError, type LedgerPort, type TxParticipant } from '../store/ports.js';
import { GENESIS_PREV, parseStoredEntry, storedHash, verifyEntrySignature, type Entry, type EntryBody, type EntryFields, type LedgerEntry } from './entry.js';
import { sealOne, sealRun, type ChainSealer, type PreSealed, type Sealed, type SealingRun } from './seal.js';

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

/** A run not sealed by then fails its group (fail closed) rather than holding every call. */
const SEAL_DEADLINE_MS = 10_000;

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LedgerError(`the group's entries were not signed within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export class Ledger {
  /** The head this process last read or wrote, by its exact bytes (saves re-verifying it). */
  private known: { body: string; head: ChainHead } | null = null;
  /**
   * Inside a group of the store (ADR 042): entries appended, not yet signed nor inserted. Each is
   * also the object appendInTx returned, which gets its `prev` and `sig` when the run is sealed.
   */
  private held: EntryBody[] | null = null;
  /** The held entries being signed as they come (once the group has enough of them). */
  private run: SealingRun | null = null;
  private sealer: ChainSealer | null = null;
  private sealing = false;
  /** Held entries were written during the running job: its rollback would take them too. */
  private wroteInJob = false;
  private poisoned = false;
  /** An entry sealed while the gate waited (preseal), for the group that appends it. */
  private ahead: PreSealed | null = null;

  constructor(
    private readonly rows: LedgerPort,
    private readonly key: GateKey,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The store's ledger rows; inside a group, what is held is written first so reads see it. */
  get port(): LedgerPort {
    this.writeHeld();
    return this.rows;
  }

  /** Whether the chain holds this very entry: its seq with its signature (one body, one signature). */
  holds(entry: LedgerEntry): boolean {
    for (const row of this.port.between(entry.seq, entry.seq)) return (JSON.parse(row.body) as { sig?: unknown }).sig === entry.sig;
    return false;
  }

  /** The chain head, from the newest entry's signed body; throws when it is not this key's. */
  head(): ChainHead | null {
    this.writeHeld();
    return this.stored();
  }

  private stored(): ChainHead | null {
    const row = this.rows.head();
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
    // A signed body at another row than its own (an older entry replayed as the last row) is the
    // key's signature on another entry: the chain would be continued from that older entry.
    // Not the key's fault (a LedgerError says that at start): the store holds a row the gate never wrote there.
    if (e.seq !== row.seq) throw new StoreError(`the newest ledger row (seq ${row.seq}) holds entry ${e.seq}: a row copied or moved outside the gate; restore the ledger from a backup`);
    const head = { seq: e.seq, ts: e.ts, hash: storedHash(row.body) };
    this.known = { body: row.body, head };
    return head;
  }

  /**
   * Append one entry. Call inside `store.transact` to commit it with its effects. Inside a group
   * of a store that enlisted this ledger, the entry is signed and inserted with the group's other
   * entries just before COMMIT: the returned entry's `seq` and `ts` are final at once, its `prev`
   * and `sig` once the transaction committed. `ts` (default: now) is when the entry's event
   * happened, e.g. a call's reply arriving; never earlier than the head's.
   * Copies are made with Object.assign, not `{ ...fields, more }`: V8 (Node 20) defines each
   * member written after a spread in a literal one by one at run time (~0.4 µs each), and the
   * gate makes a few such objects per call.
   */
  appendInTx(fields: EntryFields, ts?: string): LedgerEntry {
    if (this.sealing) throw new LedgerError('an entry was appended while the group was being sealed');
    const held = this.held;
    const tail = held && held.length > 0 ? held[held.length - 1] : null;
    const head = tail ? { seq: tail.seq, ts: tail.ts } : this.head();
    const body = bodyAfter(head, fields, ts ?? this.timestamp());
    if (held) {
      held.push(body);
      // Enough entries for the signing thread: it signs them while the group decides the rest.
      if (this.run) this.run.push(body);
      else if (this.sealer && held.length >= this.sealer.inlineBelow) {
        const head = this.stored();
        this.run = this.sealer.start(head ? head.hash : GENESIS_PREV);
        for (const b of held) this.run.push(b);
      }
      return body as unknown as LedgerEntry;
    }
    const prev = head ? (head as ChainHead).hash : GENESIS_PREV;
    const [s] = sealRun(prev, [body], (m) => this.key.sign(m), this.takeAhead());
    body.prev = prev;
    this.insert(body, s);
    return Object.assign({}, body, { sig: s.sig }) as unknown as LedgerEntry;
  }

  /** Now, as an entry's `ts` (what appendInTx stamps when it is given none). */
  timestamp(): string {
    return new Date(this.clock()).toISOString();
  }

  /**
   * While the gate waits for its next call (ADR 045): seal now the entry the next group is
   * expected to append first, `fields` at `ts` right after the head this process knows, so that
   * group signs one entry less. The seal is used only for a body whose canonical bytes are these
   * (appendInTx with the same fields and ts, after the same head); any other append signs as
   * always. Never throws: a seal not made is only a signature made later.
   */
  preseal(fields: EntryFields, ts: string): void {
    const known = this.known;
    if (this.held !== null || this.sealing || this.key.slowInline || known === null) return;
    try {
      this.ahead = sealOne(known.head.hash, bodyAfter(known.head, fields, ts), (m) => this.key.sign(m));
    } catch {
      this.ahead = null;
    }
  }

  /** The presealed entry, for one run only: whether that run uses it or not, it is spent. */
  private takeAhead(): PreSealed | null {
    const ahead = this.ahead;
    this.ahead = null;
    return ahead;
  }

  private insert(body: EntryBody, s: Sealed): void {
    this.rows.insert({ seq: body.seq, ts: body.ts, kind: body.kind, hash: s.hash, body: s.stored });
    // Only after the insert succeeded; a rolled-back transaction re-reads and re-verifies.
    this.known = { body: s.stored, head: { seq: body.seq, ts: body.ts, hash: s.hash } };
  }

  /** Seals and inserts what is held, inline (a reader inside the group needs the rows now). */
  private writeHeld(): void {
    const held = this.held;
    if (!held || held.length === 0) return;
    if (this.sealing) throw new LedgerError('the ledger was read while the group was being sealed');
    this.held = [];
    this.wroteInJob = true;
    this.dropRun();
    const head = this.stored();
    this.place(held, sealRun(head ? head.hash : GENESIS_PREV, held, (m) => this.key.sign(m), this.takeAhead()));
  }

  /** Inline sealing takes over what the signing thread was given. */
  private dropRun(): void {
    this.run?.abandon();
    this.run = null;
  }

  /** The run's seals into the held entries (the callers' objects) and their rows. */
  private place(held: EntryBody[], sealed: Sealed[]): void {
    held.forEach((body, i) => {
      Object.assign(body, { prev: sealed[i].prev, sig: sealed[i].sig });
      this.insert(body, sealed[i]);
    });
  }

  /**
   * This ledger as a participant in the store's groups (ADR 042): entries appended in a group are
   * held, then sealed as one run (by `sealer` off this thread when the run is long enough) and
   * inserted before COMMIT.
   */
  participant(sealer: ChainSealer | null, deadlineMs = SEAL_DEADLINE_MS): TxParticipant {
    return {
      begin: () => {
        this.held = [];
        this.sealer = sealer;
        this.poisoned = false;
      },
      mark: () => {
        this.wroteInJob = false;
        return this.held?.length ?? 0;
      },
      rollback: (mark) => {
        // Rows written for earlier jobs inside this job's savepoint went with it: the group
        // cannot commit without them, so it fails whole.
        if (this.wroteInJob) this.poisoned = true;
        this.held?.splice(mark);
        this.run?.cut(mark);
      },
      prepare: () => {
        if (this.poisoned) throw new LedgerError('a job that read the ledger failed after earlier entries of its group were written');
        const held = this.held;
        const run = this.run;
        this.run = null;
        if (!held || held.length === 0 || !run) {
          run?.abandon();
          return this.writeHeld();
        }
        this.held = [];
        this.sealing = true;
        return withDeadline(run.end(), deadlineMs)
          .then((sealed) => {
            if (sealed.length !== held.length) throw new LedgerError('the signing thread returned another number of entries');
            this.place(held, sealed);
          })
          .finally(() => (this.sealing = false));
      },
      finish: (committed) => {
        this.dropRun();
        this.ahead = null;
        this.sealer = null;
        this.held = null;
        this.sealing = false;
        this.poisoned = false;
        if (!committed) this.known = null;
      },
    };
  }
}

/**
 * The body of the entry appended after `head` (null: the first): the next seq, and `ts` unless
 * that is before the head's (time never goes backwards in the chain, even if the clock does or
 * another gate is ahead). `prev` is set when the entry is sealed.
 */
function bodyAfter(head: { seq: number; ts: string } | null, fields: EntryFields, ts: string): EntryBody {
  if (head && ts < head.ts) ts = head.ts;
  return Object.assign({}, fields, { v: 1 as const, seq: head ? head.seq + 1 : 0, ts, prev: '' }) as unknown as EntryBody;
}

/** Entries in seq order from `fromSeq`, at most `limit`, parsed strictly (not verified: see verify/). */
export function* readEntries(port: LedgerPort, fromSeq = 0, limit = Number.MAX_SAFE_INTEGER): Generator<Entry> {
  for (const body of port.bodies(fromSeq, limit)) yield parseStoredEntry(body);
}

