// Epochs: the gate seals the entries since the last epoch under one RFC 6962 Merkle root and
// records it as a signed `epoch` entry. Leaf data is the 32 bytes of each entry's hash (sha256 of
// its canonical form, signature included), so the root commits to every entry's exact bytes and
// order. Epoch n+1 starts at epoch n's own entry, so every entry but the newest epoch entry lies
// inside some epoch, and an anchor on a later root also covers everything before it (the chain
// of `prev` hashes). The epoch is read and appended in one transaction: two gates sharing a home
// cannot seal overlapping epochs.
import type { LedgerPort } from '../store/ports.js';
import { parseStoredEntry, storedHash, type EntryOf } from './entry.js';
import type { Ledger } from './ledger.js';
import { MerkleTreeBuilder } from './merkle.js';
import { StoreError } from '../store/ports.js';

/** A stored epoch entry (its fields: core/entries.ts). */
export type EpochEntry = EntryOf<'epoch'>;

/** The 32 bytes of an entry hash `sha256:HEX` (the Merkle leaf data). */
export function hashBytes(hash: string): Buffer {
  if (!/^sha256:[0-9a-f]{64}$/.test(hash)) throw new RangeError('entry hash: expected sha256:HEX');
  return Buffer.from(hash.slice(7), 'hex');
}

export function rootBytes(root: string): Buffer {
  return hashBytes(root);
}

/**
 * The time an epoch's anchors must not precede: its last entry's (`lastTs`), rounded down to the
 * second, since RFC 3161 genTime and Rekor integratedTime commonly carry whole seconds. verify
 * holds stored anchors to it, and the gate checks an anchor against it before storing one.
 */
export function anchorNotBefore(lastTs: string): Date {
  const t = Date.parse(lastTs);
  return new Date(t - (t % 1000));
}

/** The `ts` of the last entry an epoch seals; call inside `store.transact`. */
export function lastTsOf(port: LedgerPort, epoch: EpochEntry): string {
  for (const row of port.between(epoch.last, epoch.last)) return parseStoredEntry(row.body).ts;
  throw new Error(`ledger: entry ${epoch.last}, the last of epoch ${epoch.seq}, is missing`);
}

/** A streaming epoch root: leaf i is the hash of entry first+i. */
export class EpochRoot {
  private readonly tree = new MerkleTreeBuilder();
  constructor(readonly first: number) {}
  add(hash: Buffer | string): void {
    this.tree.addLeaf(typeof hash === 'string' ? hashBytes(hash) : hash);
  }
  /** Adds an already computed RFC 6962 leaf hash. */
  addLeafHash(leaf: Uint8Array): void {
    this.tree.addLeafHash(leaf);
  }
  /** Adds `size` leaves by their perfect subtree's root (MerkleTreeBuilder.addSubtree). */
  addSubtree(root: Uint8Array, size: number): void {
    this.tree.addSubtree(root, size);
  }
  get size(): number {
    return this.tree.size;
  }
  root(): string {
    return 'sha256:' + this.tree.root().toString('hex');
  }
}

/**
 * Whether a stored body is an entry of `kind`. A canonical body names its own kind at top level
 * as exactly `"kind":"<kind>"`, which nested keys cannot match unescaped: only candidates are parsed.
 */
export function bodyIsKind(body: string, kind: string): boolean {
  return body.includes(`"kind":${JSON.stringify(kind)}`) && parseStoredEntry(body).kind === kind;
}

/** The newest epoch entry, or null. */
export function lastEpoch(port: LedgerPort): EpochEntry | null {
  const row = port.lastOfKind('epoch');
  if (!row) return null;
  // The kind column only finds the row; what counts is the signed body.
  const e = parseStoredEntry(row.body);
  if (e.kind !== 'epoch') throw new Error(`ledger: the row indexed as the newest epoch (seq ${e.seq}) is not an epoch entry`);
  return e as unknown as EpochEntry;
}

/**
 * Seals the entries since the last epoch; call inside `store.transact`. Returns the new epoch
 * entry, or null when nothing was appended since the last epoch (or the ledger is empty).
 */
export function sealEpochInTx(ledger: Ledger): EpochEntry | null {
  const head = ledger.head();
  if (!head) return null;
  const prev = lastEpoch(ledger.port);
  const first = prev ? prev.seq : 0;
  if (prev && head.seq === prev.seq) return null;
  const acc = new EpochRoot(first);
  // Leaves are the hashes of the stored bytes, not of the unsigned hash column.
  let expect = first;
  for (const row of ledger.port.between(first, head.seq)) {
    if (row.seq !== expect) throw new Error(`ledger: seq ${expect} missing while sealing an epoch`);
    // The epoch was found by the unsigned kind column: a newer epoch it hides would be sealed over.
    if (row.seq > first && bodyIsKind(row.body, 'epoch'))
      throw new StoreError(`ledger: entry ${row.seq} is an epoch entry the kind column does not name as one (the column was edited outside the gate); no epoch is sealed over it: restore the ledger from a backup`);
    acc.add(storedHash(row.body));
    expect++;
  }
  if (expect !== head.seq + 1) throw new Error('ledger: entries missing while sealing an epoch');
  return ledger.appendInTx({ kind: 'epoch', first, last: head.seq, size: acc.size, root: acc.root() }) as EpochEntry;
}
