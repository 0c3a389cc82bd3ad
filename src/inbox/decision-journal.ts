// A decision written aside before it commits, for the embedded store. Its ledger.db and the
// operations.db ATTACHed to it commit one after the other (WAL: each file atomically, the pair
// not; ADR 002): an inbox killed between them left the operator entry without the request taken
// and its receipt offered (the ledger said "approved", the gate never got a receipt, the page still
// showed the request, and a second approval signed a second receipt), or, the other way round, a
// receipt no entry records. The inbox completes what a note left here says when it starts again:
// the half that committed decides. A note holds ids, digests and the signed receipt (what
// operations.db holds), never an argument value. PostgreSQL commits the pair as one: no notes.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { syncFolder, writeAll } from '../util/atomic-write.js';
import type { EntryFields } from '../core/entries.js';
import type { Ledger } from '../ledger/ledger.js';
import { readEntries } from '../ledger/ledger.js';
import type { OfferedReceipt, Store } from '../store/ports.js';

/** What one decision is about to commit. */
export interface DecisionNote {
  /** The request it takes. */
  id: string;
  /** The ledger's last seq before it: its entry, if it committed, comes after. */
  head: number;
  /** The operator entry it appends. */
  entry: EntryFields & { kind: 'operator'; action: 'approve' | 'deny'; request_entry: number };
  /** The receipt it offers (approve). */
  offer?: OfferedReceipt;
}

export class DecisionJournal {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Durable before the decision's transaction begins: its name, to drop once that committed. */
  write(note: DecisionNote): string {
    const file = join(this.dir, `${randomBytes(12).toString('hex')}.json`);
    const fd = openSync(file, 'wx', 0o600);
    try {
      writeAll(fd, JSON.stringify(note));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    syncFolder(this.dir);
    return file;
  }

  drop(file: string): void {
    unlinkSync(file);
  }

  /** Completes every note left by a decision that did not finish (at start, or after a failed commit). */
  async recover(store: Store, ledger: Ledger, only?: string): Promise<number> {
    const files = only !== undefined ? [only] : readdirSync(this.dir).filter((n) => n.endsWith('.json')).map((n) => join(this.dir, n));
    let completed = 0;
    for (const file of files) {
      const note = readNote(file);
      // A note cut while it was written: its transaction never began (it begins once the note is synced).
      if (note !== null && (await store.transact(() => complete(store, ledger, note)))) completed++;
      this.drop(file);
    }
    return completed;
  }
}

function readNote(file: string): DecisionNote | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DecisionNote;
  } catch (e) {
    if (e instanceof SyntaxError) return null;
    throw e;
  }
}

/** The half of a decision that did not commit, from the half that did; whether anything was. */
function complete(store: Store, ledger: Ledger, note: DecisionNote): boolean {
  const { entry, offer } = note;
  const recorded = [...readEntries(ledger.port, note.head + 1)].some(
    (e) => e.kind === 'operator' && e.action === entry.action && e.request_entry === entry.request_entry && (!offer || e.receipt === offer.receipt_id),
  );
  const at = new Date().toISOString();
  if (recorded) {
    // The entry committed: the request is decided, and an approval's receipt is where the gate takes it.
    if (store.approvalRequests.get(note.id) === null) return false;
    store.approvalRequests.take(note.id, at);
    if (offer) store.approvalRequests.offer(offer);
    return true;
  }
  // No entry. A receipt that reached the store (offered, or already used) is an approval the
  // ledger must show; anything else never happened and the request still waits.
  if (offer && (store.approvalRequests.offered(entry.fingerprint).some((o) => o.receipt_id === offer.receipt_id) || store.receipts.used(offer.receipt_id) !== null)) {
    ledger.appendInTx(entry);
    return true;
  }
  return false;
}
