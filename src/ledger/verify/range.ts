// A range of entries checked where it was read (a worker thread reading its own rows, ADR 032...
// see docs/performance.md): each entry's own checks (check-entry.ts) and the links between
// entries of the range (entryFault), so that what comes back to the main thread is small: the
// leaves packed in one buffer, already folded into the perfect subtrees the two Merkle trees
// take them as (ADR 044: the main thread adds O(log n) nodes per range, not a node per entry),
// the first entry's links, the last entry's hash and time, the epoch entries, and the first
// fault. ChainChecker.pushRange takes it in and reports exactly what checking the same entries
// one by one would.
import type { KeyObject } from 'node:crypto';
import type { Entry } from '../entry.js';
import { checkEntryLine } from './check-entry.js';
import { entryFault, type Fault } from './chain.js';
import { foldLeaves, type Fold } from '../merkle.js';
import { storedBytesFault } from './stored-bytes.js';
import { editedRow, type EditedRow } from './edited-row.js';
import type { StoredRow } from '../../store/ports.js';

export interface RangeEpoch {
  j: number;
  seq: number;
  ts: string;
  /** ts of the entry before it in the range (undefined for the range's first entry). */
  prevTs?: string;
  first: unknown;
  last: unknown;
  size: unknown;
  root: unknown;
  /** A member the gate does not write in an epoch entry (members.ts), or null. */
  extra: string | null;
}

export interface RangeChecked {
  /** Index of the range's first entry in the ledger. */
  start: number;
  /** Entries read (the fault's entry included). */
  n: number;
  /** 32 bytes per entry before the fault: RFC 6962 leaf hashes, in order. */
  leaves: Uint8Array;
  /** Those leaves folded for the tree over every entry (which holds `start` leaves before them). */
  whole: Fold;
  /**
   * Those leaves folded for the epoch trees, cut at each epoch entry (which starts a new tree):
   * one fold more than `epochs`. The first assumes the running epoch tree holds `epochOffset`
   * leaves (the caller's guess); the reader adds its leaves one by one when it does not.
   */
  segments: Fold[];
  epochOffset: number;
  /** The first entry's links, checked against the entry before the range by the reader. */
  first: { seq: number; prev: string; ts: string } | null;
  last: { hash: string; ts: string } | null;
  epochs: RangeEpoch[];
  /** The first fault: entry j of the range (at j = 0 only its own checks, never its links). */
  fault: { j: number; fault: Fault } | null;
  /** The first row before the fault whose unsigned columns are not its entry's (rows read with their columns only). */
  edited: EditedRow | null;
  /** The parsed entries before the fault, when asked for. */
  entries?: Entry[];
}

/** `lines`: entry lines, or a database's rows with their columns (then checked too, edited-row.ts). */
export function checkRange(lines: Iterable<string | StoredRow>, start: number, key: KeyObject, withEntries: boolean, epochOffset = start): RangeChecked {
  const leaves: Uint8Array[] = [];
  const epochs: RangeEpoch[] = [];
  const entries: Entry[] | undefined = withEntries ? [] : undefined;
  let first: RangeChecked['first'] = null;
  let before: { hash: string; ts: string } | null = null;
  let fault: RangeChecked['fault'] = null;
  let edited: EditedRow | null = null;
  let j = 0;
  const rows = lines[Symbol.iterator]();
  for (;;) {
    let next: IteratorResult<string | StoredRow>;
    try {
      next = rows.next();
    } catch (e) {
      const f = storedBytesFault(e); // a row that is not what it reads as: that entry's fault
      if (!f) throw e;
      fault = { j, fault: f };
      j++;
      break;
    }
    if (next.done) break;
    const row = next.value;
    const c = checkEntryLine(typeof row === 'string' ? row : row.body, key, withEntries);
    const f = entryFault(c, start + j, before);
    if (f) {
      fault = { j, fault: f };
      j++;
      break;
    }
    const ok = c as Extract<typeof c, { ok: true }>;
    if (edited === null && typeof row !== 'string') edited = editedRow(row, ok);
    if (j === 0) first = { seq: ok.seq, prev: ok.prev, ts: ok.ts };
    if (ok.kind === 'epoch') epochs.push({ j, seq: ok.seq, ts: ok.ts, prevTs: before?.ts, ...ok.epoch! });
    leaves.push(ok.leaf);
    entries?.push(ok.entry!);
    before = { hash: ok.hash, ts: ok.ts };
    j++;
  }
  const packed = new Uint8Array(32 * leaves.length);
  leaves.forEach((l, i) => packed.set(l, 32 * i));
  const memo = new Map<string, Buffer>();
  const cuts = [0, ...epochs.map((e) => e.j), leaves.length];
  const segments: Fold[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) segments.push(foldLeaves(packed, cuts[i], cuts[i + 1], i === 0 ? epochOffset : 0, memo));
  const whole = foldLeaves(packed, 0, leaves.length, start, memo);
  return { start, n: j, leaves: packed, whole, segments, epochOffset, first, last: before, epochs, fault, edited, ...(entries ? { entries } : {}) };
}
